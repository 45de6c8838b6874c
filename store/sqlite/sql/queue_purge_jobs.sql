-- One batch of QueuePurge: deletes up to :limit jobs of :queue that are
-- not running (queued or finished), with their journals. Running jobs
-- stay with their holders, workflows' tasks with their workflows, and
-- the children of a parent that is not final with their parent, which
-- would wait for them for ever (cancel it, which cancels them).
-- No index serves "every job of a queue": a purge is a rare operator's
-- act, and an index for it would cost every write.
DELETE FROM jobd_jobs
WHERE id IN (
    SELECT id FROM jobd_jobs
    WHERE queue = :queue AND state <> 'running'
      AND workflow_id IS NULL -- a workflow's task is left: cancel the workflow
      AND NOT EXISTS (SELECT 1 FROM jobd_jobs p
                      WHERE p.id = jobd_jobs.parent_id
                        AND p.state IN ('waiting', 'queued', 'running'))
    LIMIT :limit
)
