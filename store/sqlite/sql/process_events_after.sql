-- A page of a process's history, oldest first.
SELECT event_id, at, payload
FROM jobd_process_events
WHERE namespace = :namespace AND process_id = :id AND event_id > :after
ORDER BY event_id
LIMIT :limit
