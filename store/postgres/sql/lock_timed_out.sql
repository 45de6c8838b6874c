-- Locks up to $2 running jobs whose attempt passed its deadline
-- (deadline <= now, $1), longest overdue first, for the reaper to decide
-- their transitions in Go (job.TimeOut) and apply them in the same
-- transaction (set_state_if_running.sql, fenced by the tokens read
-- here). The lease index finds them: a lease never outlives its
-- deadline, so lease_expires_at <= deadline <= now. A job a worker is
-- heartbeating or finishing right now is skipped (SKIP LOCKED); its
-- writes are refused anyway, past the deadline, and the next pass takes
-- it. The facts are lock_expired.sql's, then the job's own timeout (NULL
-- when the deadline came from its queue's default), then the
-- transaction's time.
SELECT id, lease_token, queue, attempt, max_attempts, cancel_requested,
       coalesce(lease_owner, ''), attempted_at, workflow_id, coalesce(workflow_ref, ''), parent_id, timeout,
       coalesce($1::timestamptz, now())
FROM jobd_jobs
WHERE state = 'running' AND lease_expires_at <= coalesce($1::timestamptz, now())
  AND deadline <= coalesce($1::timestamptz, now())
ORDER BY lease_expires_at
LIMIT $2
FOR UPDATE SKIP LOCKED;
