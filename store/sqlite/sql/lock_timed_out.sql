-- The facts of up to :limit running jobs whose attempt passed its
-- deadline (deadline <= :now), longest overdue first, for the reaper to
-- decide their transitions in Go (job.TimeOut) and apply them in the same
-- write transaction (set_state_if_running.sql). The lease index finds
-- them: a lease never outlives its deadline. The facts are
-- lock_expired.sql's, then the job's own timeout (NULL when the deadline
-- came from its queue's default).
SELECT id, lease_token, queue, attempt, max_attempts, cancel_requested,
       coalesce(lease_owner, ''), attempted_at, coalesce(workflow_id, ''), coalesce(workflow_ref, ''), coalesce(parent_id, ''), timeout_us
FROM jobd_jobs
WHERE state = 'running' AND lease_expires_at <= :now
  AND deadline <= :now
ORDER BY lease_expires_at
LIMIT :limit
