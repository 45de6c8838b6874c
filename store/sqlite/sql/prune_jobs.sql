-- Deletes finished jobs, with their journals, that finished before
-- :before, oldest first; the finished index finds them.
DELETE FROM jobd_jobs
WHERE id IN (
    SELECT id FROM jobd_jobs
    WHERE state IN ('succeeded', 'failed', 'canceled') AND finished_at < :before
      AND workflow_id IS NULL -- a task goes with its workflow (workflow_prune.sql)
    ORDER BY finished_at
    LIMIT :limit
)
