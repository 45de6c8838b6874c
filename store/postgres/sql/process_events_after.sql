-- A page of a process's history, oldest first. $1 namespace, $2 id,
-- $3 the last event_id already seen, $4 limit.
SELECT event_id, at, payload
FROM jobd_process_events
WHERE namespace = $1 AND process_id = $2 AND event_id > $3
ORDER BY event_id
LIMIT $4;
