-- Locks up to $2 running jobs whose lease expired (lease_expires_at <=
-- now, $1) but whose attempt's deadline has not passed (those are
-- lock_timed_out.sql's), longest expired first, for the reaper to decide their
-- transitions in Go (job.Rescue) and apply them in the same transaction
-- (set_state_if_running.sql, fenced by the tokens read here). A job a
-- worker is heartbeating or finishing right now is skipped (SKIP LOCKED),
-- and the expiry is re-checked on the row version FOR UPDATE locks, so a
-- lease renewed meanwhile is left alone. The facts include the lease
-- owner and attempted_at, from which the decision stores the claim the
-- row implied. The last column is the transaction's time, which the
-- decision uses.
SELECT id, lease_token, queue, attempt, max_attempts, cancel_requested,
       coalesce(lease_owner, ''), attempted_at, workflow_id, coalesce(workflow_ref, ''), parent_id,
       coalesce($1::timestamptz, now())
FROM jobd_jobs
WHERE state = 'running' AND lease_expires_at <= coalesce($1::timestamptz, now())
  AND (deadline IS NULL OR deadline > coalesce($1::timestamptz, now()))
ORDER BY lease_expires_at
LIMIT $2
FOR UPDATE SKIP LOCKED;
