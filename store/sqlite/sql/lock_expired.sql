-- The facts of up to :limit running jobs whose lease expired, but not
-- their attempt's deadline (those are lock_timed_out.sql's)
-- (lease_expires_at <= :now: the expiry is the first instant the lease no
-- longer covers), longest expired first, for the reaper to decide their
-- transitions in Go (job.Rescue) and apply them in the same write
-- transaction (set_state_if_running.sql). The lease index finds them.
-- The lease owner and attempted_at are the facts from which the decision
-- stores the claim the row implied.
SELECT id, lease_token, queue, attempt, max_attempts, cancel_requested,
       coalesce(lease_owner, ''), attempted_at, coalesce(workflow_id, ''), coalesce(workflow_ref, ''), coalesce(parent_id, '')
FROM jobd_jobs
WHERE state = 'running' AND lease_expires_at <= :now
  AND (deadline IS NULL OR deadline > :now)
ORDER BY lease_expires_at
LIMIT :limit
