-- Records a worker.offline event in the outbox for each worker of
-- :workers, a JSON array of ids, in order.
INSERT INTO jobd_webhook_events (type, at, worker_id, worker_name)
SELECT 'worker.offline', :now, w.id, w.name
FROM json_each(:workers) AS e
JOIN jobd_workers AS w ON w.id = e.value
ORDER BY e.key
