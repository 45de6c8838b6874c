-- Moves the chosen candidates to running, each under its fresh lease
-- token. :batch is a JSON array of {"id", "token"}. started_at is kept
-- from the first claim. The rows come back in no particular order. The
-- claim writes no journal entry: attempted_at (with lease_owner, the
-- entry's detail, and the attempt) implies its "claimed" entry until a
-- later transition stores it (see job.Journal).
UPDATE jobd_jobs
SET state = 'running',
    attempt = attempt + 1,
    lease_token = b.value ->> 'token',
    lease_owner = :owner,
    lease_expires_at = :now + lease_ttl_us,
    heartbeat_at = :now,
    started_at = coalesce(started_at, :now),
    attempted_at = :now,
    updated_at = :stamp
FROM json_each(:batch) AS b
WHERE jobd_jobs.id = b.value ->> 'id' AND jobd_jobs.state = 'queued'
RETURNING id, queue, kind, args, state, priority, run_at, attempt, max_attempts, lease_ttl_us,
          lease_token, lease_owner, lease_expires_at, heartbeat_at, lock_key, partition_key,
          idempotency_key, args_hash, cancel_requested, progress, checkpoint, result,
          last_error, created_at, started_at, finished_at, updated_at,
          requires, prefers, attempted_at, trace_parent
