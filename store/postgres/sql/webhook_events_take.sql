-- Deletes and returns up to $1 events of the outbox, oldest first, skipping
-- those a concurrent taker holds: its transaction decides what they
-- become, and they come back if it rolls back.
WITH taken AS (
    DELETE FROM jobd_webhook_events
    WHERE id IN (
        SELECT id FROM jobd_webhook_events
        ORDER BY id
        LIMIT $1
        FOR UPDATE SKIP LOCKED
    )
    RETURNING id, type, at, job_id, coalesce(queue, ''), coalesce(kind, ''),
              coalesce(attempt, 0), coalesce(max_attempts, 0), coalesce(error, ''),
              finished_at, coalesce(url, ''), coalesce(worker_id, ''), coalesce(worker_name, ''),
              workflow_id, coalesce(workflow_name, ''), coalesce(workflow_state, '')
)
SELECT * FROM taken ORDER BY id;
