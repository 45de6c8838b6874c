-- Retention of one queue: deletes finished jobs of queue $1 whose
-- finished_at is before $2, at most $3 of them, with their journal. Like
-- prune.sql they are found through the index on updated_at, since a
-- finished job's updated_at is its finished_at; the queue is a filter on
-- the rows that index yields.
WITH doomed AS (
    SELECT id
    FROM jobd_jobs
    WHERE updated_at < $2
      AND queue = $1
      AND state IN ('succeeded', 'failed', 'canceled')
      AND workflow_id IS NULL -- a task goes with its workflow (workflow_prune.sql)
      AND finished_at < $2
    ORDER BY updated_at
    LIMIT $3
    FOR UPDATE SKIP LOCKED
),
deleted AS (
    DELETE FROM jobd_jobs j USING doomed WHERE j.id = doomed.id
    RETURNING j.id
)
SELECT count(*) FROM deleted;
