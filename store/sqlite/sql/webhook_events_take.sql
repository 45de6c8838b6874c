-- Deletes and returns up to :limit events of the outbox, oldest first.
-- SQLite serialises writers: the transaction that takes them holds them
-- until it commits or rolls back.
DELETE FROM jobd_webhook_events
WHERE id IN (SELECT id FROM jobd_webhook_events ORDER BY id LIMIT :limit)
RETURNING id, type, at, coalesce(job_id, ''), coalesce(queue, ''), coalesce(kind, ''),
          coalesce(attempt, 0), coalesce(max_attempts, 0), coalesce(error, ''),
          finished_at, coalesce(url, ''), coalesce(worker_id, ''), coalesce(worker_name, ''),
          coalesce(workflow_id, ''), coalesce(workflow_name, ''), coalesce(workflow_state, '')
