-- One batch of QueuePurge: deletes up to $2 jobs of queue $1 that are not
-- running, with their journal. Workflows' tasks are left alone (cancel
-- the workflow; it is pruned whole), and so are the children of a
-- parent that is not final: it would wait for them for ever (cancel the
-- parent, which cancels them; once it is final they go as any job). Returns how many jobs the batch selected
-- (fewer than $2: the queue had no more) and how many it deleted.
--
-- No index serves "every job of a queue": a purge is a rare operator's
-- act, and an index for it would cost every write.
--
-- The candidates come from the statement's snapshot; the DELETE re-checks
-- the state on the current row version (a claim may have committed
-- since), so a job that became running is left to its holder.
WITH doomed AS (
    SELECT id
    FROM jobd_jobs
    WHERE queue = $1 AND state <> 'running' AND workflow_id IS NULL
      AND NOT EXISTS (SELECT 1 FROM jobd_jobs p
                      WHERE p.id = jobd_jobs.parent_id
                        AND p.state IN ('waiting', 'queued', 'running'))
    LIMIT $2
),
deleted AS (
    DELETE FROM jobd_jobs
    WHERE id IN (SELECT id FROM doomed) AND state <> 'running'
    RETURNING id
)
SELECT (SELECT count(*) FROM doomed), (SELECT count(*) FROM deleted);
