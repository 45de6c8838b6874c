-- Cancels a queued job at once, or asks a running one to stop. $1 now,
-- $2 job id. Returns the job with changed = true when it did either, and
-- with changed = false, unchanged, otherwise: already final, or running
-- with its cancel already requested (a repeated cancel writes nothing, not
-- even a second journal entry). No row when there is no such job.
-- Asking a running job to stop notifies jobd_cancel with its id, which
-- PostgreSQL delivers on commit, so that its holder stops it at once.
WITH canceled AS (
    UPDATE jobd_jobs SET
        state = CASE WHEN state = 'queued' THEN 'canceled' ELSE state END,
        cancel_requested = (state = 'running'),
        finished_at = CASE WHEN state = 'queued' THEN coalesce($1::timestamptz, now()) END,
        updated_at = coalesce($1::timestamptz, now())
    WHERE id = $2
      AND (state = 'queued' OR (state = 'running' AND NOT cancel_requested))
    RETURNING *
),
journal AS (
    INSERT INTO jobd_job_events (job_id, at, kind, attempt)
    SELECT id, updated_at,
           CASE WHEN state = 'canceled' THEN 'canceled' ELSE 'cancel-requested' END,
           attempt
    FROM canceled
),
-- A CTE that only reads runs only when the statement reads it, hence the
-- join below. A repeated cancel updates nothing and so notifies nothing.
notified AS (
    SELECT count(pg_notify('jobd_cancel', id::text)) AS jobs
    FROM canceled
    WHERE state = 'running'
)
SELECT true AS changed,
       id, queue, kind, args, state, priority, run_at, attempt, max_attempts, lease_ttl,
       lease_token, lease_owner, lease_expires_at, heartbeat_at, lock_key, partition_key,
       idempotency_key, args_hash, cancel_requested, progress, checkpoint, result,
       last_error, created_at, started_at, finished_at, updated_at,
       requires, prefers
FROM canceled, notified
UNION ALL
-- The statement's snapshot still shows the row as it was before; it is
-- read only when the update matched nothing. When a concurrent
-- transaction changed the row after that snapshot was taken, the row read
-- here is stale (it would have matched the update): the driver runs the
-- statement again.
SELECT false,
       id, queue, kind, args, state, priority, run_at, attempt, max_attempts, lease_ttl,
       lease_token, lease_owner, lease_expires_at, heartbeat_at, lock_key, partition_key,
       idempotency_key, args_hash, cancel_requested, progress, checkpoint, result,
       last_error, created_at, started_at, finished_at, updated_at,
       requires, prefers
FROM jobd_jobs
WHERE id = $2 AND NOT EXISTS (SELECT 1 FROM canceled);
