-- The tasks of workflow :id that are not final, by id, for its cancel
-- (store.DecideCancel), found by the workflow index.
SELECT j.id, j.workflow_id, j.workflow_ref, j.queue, j.run_on, coalesce(j.pending, 0), j.run_at,
       j.canceled_by, j.state, j.attempt, j.max_attempts, j.cancel_requested,
       coalesce(j.lease_owner, ''), j.attempted_at, j.finished_at, j.rerun, j.timeout_us,
       coalesce(j.wait_for, '')
FROM jobd_jobs AS j
WHERE j.workflow_id = :id
  AND j.state IN ('waiting', 'queued', 'running')
ORDER BY j.id
