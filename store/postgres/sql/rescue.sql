-- The reaper: running jobs whose lease expired (lease_expires_at <= now)
-- go back to queued (run_at now, "rescued"), or to failed when they used
-- all their attempts ("failed", last error "lease expired"), or to
-- canceled when their cancel was requested ("canceled": a cancel request
-- wins, the job must not run again). $1 now, $2 at most this many jobs. A
-- job a worker is heartbeating or finishing right now is skipped (SKIP
-- LOCKED), and the expiry is re-checked on the row version FOR UPDATE
-- locks, so a lease renewed meanwhile is left alone.
WITH expired AS (
    SELECT id
    FROM jobd_jobs
    WHERE state = 'running' AND lease_expires_at <= coalesce($1::timestamptz, now())
    ORDER BY lease_expires_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
),
rescued AS (
    UPDATE jobd_jobs j SET
        state = CASE WHEN j.cancel_requested THEN 'canceled'
                     WHEN j.attempt >= j.max_attempts THEN 'failed'
                     ELSE 'queued' END,
        run_at = CASE WHEN j.cancel_requested OR j.attempt >= j.max_attempts THEN j.run_at
                      ELSE coalesce($1::timestamptz, now()) END,
        last_error = CASE WHEN NOT j.cancel_requested AND j.attempt >= j.max_attempts
                          THEN 'lease expired' ELSE j.last_error END,
        finished_at = CASE WHEN j.cancel_requested OR j.attempt >= j.max_attempts
                           THEN coalesce($1::timestamptz, now()) END,
        lease_token = NULL,
        lease_expires_at = NULL,
        updated_at = coalesce($1::timestamptz, now())
    FROM expired
    WHERE j.id = expired.id
    RETURNING j.id, j.queue, j.state, j.attempt, j.updated_at
),
journal AS (
    INSERT INTO jobd_job_events (job_id, at, kind, attempt, detail)
    SELECT id, updated_at,
           CASE WHEN state = 'queued' THEN 'rescued' ELSE state END,
           attempt, 'lease expired'
    FROM rescued
),
woken AS (
    SELECT count(pg_notify('jobd_wake', queue)) AS queues
    FROM (SELECT DISTINCT queue FROM rescued WHERE state = 'queued') available
)
SELECT count(*) FROM rescued, woken;
