-- The facts of the jobs whose leases a batch of outcomes names, for
-- JobFinish to decide their transitions in Go (job.Finish) and apply them
-- in the same write transaction (set_state_if_running.sql), which holds
-- the database's write lock: nothing changes them in between. :leases is
-- a JSON array of {"id", "token"}. Only the jobs still held (state
-- running, token current, deadline not passed at :now) come back, with the lease owner and
-- attempted_at, from which the decision stores the claim the row implied.
-- CROSS JOIN keeps the batch the outer loop: each job is found by primary
-- key.
SELECT j.id, j.lease_token, j.queue, j.attempt, j.max_attempts, j.cancel_requested,
       coalesce(j.lease_owner, ''), j.attempted_at, coalesce(j.workflow_id, ''), coalesce(j.workflow_ref, ''), coalesce(j.parent_id, '')
FROM json_each(:leases) AS l
CROSS JOIN jobd_jobs AS j
WHERE j.id = l.value ->> 'id'
  AND j.state = 'running'
  AND j.lease_token = l.value ->> 'token'
  AND (j.deadline IS NULL OR j.deadline > :now)
