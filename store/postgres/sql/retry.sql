-- An operator's retry: a failed or canceled job back to queued, attempts
-- reset, run_at now. $1 now, $2 job id. Returns the job with changed =
-- false, unchanged, when it is in another state, and no row when there is
-- no such job. A unique violation on jobd_jobs_active means an active twin
-- with the same args hash exists.
WITH retried AS (
    UPDATE jobd_jobs SET
        state = 'queued',
        attempt = 0,
        run_at = coalesce($1::timestamptz, now()),
        cancel_requested = false,
        lease_token = NULL,
        lease_expires_at = NULL,
        finished_at = NULL,
        updated_at = coalesce($1::timestamptz, now())
    WHERE id = $2 AND state IN ('failed', 'canceled')
    RETURNING *
),
journal AS (
    INSERT INTO jobd_job_events (job_id, at, kind, attempt)
    SELECT id, updated_at, 'manual-retry', attempt FROM retried
),
woken AS (
    SELECT count(pg_notify('jobd_wake', queue)) AS queues FROM retried
)
SELECT true AS changed,
       id, queue, kind, args, state, priority, run_at, attempt, max_attempts, lease_ttl,
       lease_token, lease_owner, lease_expires_at, heartbeat_at, lock_key, partition_key,
       idempotency_key, args_hash, cancel_requested, progress, checkpoint, result,
       last_error, created_at, started_at, finished_at, updated_at,
       requires, prefers
FROM retried, woken
UNION ALL
SELECT false,
       id, queue, kind, args, state, priority, run_at, attempt, max_attempts, lease_ttl,
       lease_token, lease_owner, lease_expires_at, heartbeat_at, lock_key, partition_key,
       idempotency_key, args_hash, cancel_requested, progress, checkpoint, result,
       last_error, created_at, started_at, finished_at, updated_at,
       requires, prefers
FROM jobd_jobs
WHERE id = $2 AND NOT EXISTS (SELECT 1 FROM retried);
