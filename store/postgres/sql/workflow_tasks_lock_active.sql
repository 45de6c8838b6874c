-- Locks, in id order, the tasks of workflow $1 that are not final, for
-- its cancel (store.DecideCancel), and returns their facts; the driver
-- locks the workflow's row after them (workflow_lock.sql). The tasks are
-- found by the workflow index, in its order.
SELECT j.id, j.workflow_id, j.workflow_ref, j.queue, j.run_on, coalesce(j.pending, 0), j.run_at,
       j.canceled_by, j.state, j.attempt, j.max_attempts, j.cancel_requested,
       coalesce(j.lease_owner, ''), j.attempted_at, j.finished_at, j.rerun, j.timeout,
       coalesce(j.wait_for, '')
FROM jobd_jobs j
WHERE j.workflow_id = $1
  AND j.state IN ('waiting', 'queued', 'running')
ORDER BY j.id
FOR UPDATE;
