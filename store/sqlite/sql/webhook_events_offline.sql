-- Records a worker.offline event in the outbox for each worker of
-- :workers, a JSON array of ids, in order (CROSS JOIN: a primary-key
-- search per id).
INSERT INTO jobd_webhook_events (type, at, worker_id, worker_name)
SELECT 'worker.offline', :now, w.id, w.name
FROM json_each(:workers) AS e
CROSS JOIN jobd_workers AS w
WHERE w.id = e.value
