-- The last $3 events of a process, oldest first. $1 namespace, $2 id.
SELECT event_id, at, payload
FROM (
    SELECT event_id, at, payload
    FROM jobd_process_events
    WHERE namespace = $1 AND process_id = $2
    ORDER BY event_id DESC
    LIMIT $3
) last
ORDER BY event_id;
