-- Locks, in id order, the parents ($1) of the children a transaction
-- ends, after every other row it locks (see store/children.go), and
-- returns their facts as workflow_tasks_lock_active.sql does.
SELECT j.id, j.workflow_id, j.workflow_ref, j.queue, coalesce(j.run_on, ''), coalesce(j.pending, 0), j.run_at,
       j.canceled_by, j.state, j.attempt, j.max_attempts, j.cancel_requested,
       coalesce(j.lease_owner, ''), j.attempted_at, j.finished_at, j.rerun, j.timeout,
       coalesce(j.wait_for, '')
FROM jobd_jobs j
WHERE j.id = ANY ($1::uuid[])
ORDER BY j.id
FOR UPDATE;
