-- JobFinish for a batch of any outcomes, in one statement, each fenced by
-- its lease token. $1 now; $2 job ids, $3 lease tokens, $4 statuses
-- (succeeded, failed, canceled, released), $5 results, $6 errors,
-- $7 retryable flags, $8 retry delays: one element per outcome.
--
-- failed or released, cancel requested -> canceled ("canceled"): a cancel
--                                         request wins, the job never runs again;
-- failed + retryable + attempts left   -> queued at now + delay ("retried");
-- failed otherwise                     -> failed ("failed");
-- released                             -> queued at now, attempt given back ("requeued");
-- succeeded, canceled                  -> themselves.
--
-- The tests are repeated in each SET expression because an UPDATE cannot
-- name its own target row in a FROM item, and they must read the target
-- row: it is the version this statement locked, with the cancel request a
-- concurrent JobCancel may just have committed. In short:
--   retry   = failed AND retryable AND attempt < max_attempts AND NOT cancel_requested
--   requeue = released AND NOT cancel_requested
WITH done AS (
    UPDATE jobd_jobs j SET
        state = CASE
            WHEN o.status IN ('failed', 'released') AND j.cancel_requested THEN 'canceled'
            WHEN o.status = 'failed' AND o.retryable AND j.attempt < j.max_attempts THEN 'queued'
            WHEN o.status = 'released' THEN 'queued'
            ELSE o.status
        END,
        run_at = CASE
            WHEN j.cancel_requested THEN j.run_at
            WHEN o.status = 'failed' AND o.retryable AND j.attempt < j.max_attempts
                THEN coalesce($1::timestamptz, now()) + o.delay
            WHEN o.status = 'released' THEN coalesce($1::timestamptz, now())
            ELSE j.run_at
        END,
        attempt = CASE
            WHEN o.status = 'released' AND NOT j.cancel_requested THEN j.attempt - 1
            ELSE j.attempt
        END,
        result = CASE WHEN o.status = 'succeeded' THEN o.result ELSE j.result END,
        last_error = CASE WHEN o.status = 'failed' THEN o.error ELSE j.last_error END,
        lease_token = NULL,
        lease_expires_at = NULL,
        finished_at = CASE
            WHEN j.cancel_requested AND o.status <> 'succeeded' THEN coalesce($1::timestamptz, now())
            WHEN o.status = 'failed' AND o.retryable AND j.attempt < j.max_attempts THEN NULL
            WHEN o.status = 'released' THEN NULL
            ELSE coalesce($1::timestamptz, now())
        END,
        updated_at = coalesce($1::timestamptz, now())
    FROM unnest($2::uuid[], $3::uuid[], $4::text[], $5::jsonb[], $6::text[], $7::boolean[], $8::interval[])
        AS o(id, token, status, result, error, retryable, delay)
    WHERE j.id = o.id
      AND j.state = 'running'
      AND j.lease_token = o.token
    RETURNING j.id, o.token, o.status, o.error, j.queue, j.state, j.run_at, j.attempt, j.updated_at
),
journal AS (
    INSERT INTO jobd_job_events (job_id, at, kind, attempt, detail)
    SELECT id, updated_at,
           CASE
               WHEN state = 'queued' AND status = 'released' THEN 'requeued'
               WHEN state = 'queued' THEN 'retried'
               ELSE state
           END,
           -- a requeued job's attempt was given back; journal the one it ran
           CASE WHEN state = 'queued' AND status = 'released' THEN attempt + 1 ELSE attempt END,
           CASE WHEN status IN ('failed', 'canceled') THEN nullif(error, '') END
    FROM done
),
-- Requeued jobs that can run now wake their queue (see insert.sql).
woken AS (
    SELECT count(pg_notify('jobd_wake', queue)) AS queues
    FROM (SELECT DISTINCT queue FROM done WHERE state = 'queued' AND run_at <= updated_at) available
)
SELECT id, token, queue, state, run_at, run_at > updated_at AS later
FROM done, woken;
