-- The facts of every task of workflow $1, by id, for a retry
-- (store.RetryPlan): read once to find the tasks to lock
-- (RetryPlan.Candidates), and again once they are locked (tasks_lock.sql),
-- by a later statement that sees every change committed before the locks.
SELECT j.id, j.workflow_id, j.workflow_ref, j.queue, j.run_on, coalesce(j.pending, 0), j.run_at,
       j.canceled_by, j.state, j.attempt, j.max_attempts, j.cancel_requested,
       coalesce(j.lease_owner, ''), j.attempted_at, j.finished_at, j.rerun, j.timeout,
       coalesce(j.wait_for, '')
FROM jobd_jobs j
WHERE j.workflow_id = $1
ORDER BY j.id;
