-- The last :limit events of a process, oldest first.
SELECT event_id, at, payload
FROM (
    SELECT event_id, at, payload
    FROM jobd_process_events
    WHERE namespace = :namespace AND process_id = :id
    ORDER BY event_id DESC
    LIMIT :limit
)
ORDER BY event_id
