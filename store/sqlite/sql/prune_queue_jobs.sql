-- Retention of one queue: deletes finished jobs of :queue that finished
-- before :before, oldest first, at most :limit; the finished index finds
-- them and the queue filters them. Their journals go with them.
DELETE FROM jobd_jobs
WHERE id IN (
    SELECT id FROM jobd_jobs
    WHERE state IN ('succeeded', 'failed', 'canceled') AND finished_at < :before
      AND workflow_id IS NULL -- a task goes with its workflow (workflow_prune.sql)
      AND queue = :queue
    ORDER BY finished_at
    LIMIT :limit
)
