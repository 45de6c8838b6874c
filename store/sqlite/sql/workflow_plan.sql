-- The facts of every task of workflow :id, by id, for a retry
-- (store.RetryPlan), found by the workflow index.
SELECT j.id, j.workflow_id, j.workflow_ref, j.queue, j.run_on, coalesce(j.pending, 0), j.run_at,
       j.canceled_by, j.state, j.attempt, j.max_attempts, j.cancel_requested,
       coalesce(j.lease_owner, ''), j.attempted_at, j.finished_at, j.rerun, j.timeout_us,
       coalesce(j.wait_for, '')
FROM jobd_jobs AS j
WHERE j.workflow_id = :id
ORDER BY j.id
