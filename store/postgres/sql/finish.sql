-- JobFinish for a batch of any outcomes, in one statement, each fenced by
-- its lease token. $1 now; $2 job ids, $3 lease tokens, $4 statuses
-- (succeeded, failed, canceled, released), $5 results, $6 errors,
-- $7 retryable flags, $8 retry delays: one element per outcome.
--
-- failed + retryable + attempts left -> queued at now + delay ("retried");
-- failed otherwise                   -> failed ("failed");
-- released                           -> queued at now, attempt given back ("requeued");
-- succeeded, canceled                -> themselves.
-- The retry test is repeated in each SET expression because an UPDATE
-- cannot name its own target row in a FROM item.
WITH done AS (
    UPDATE jobd_jobs j SET
        state = CASE
            WHEN o.status = 'failed' AND o.retryable AND j.attempt < j.max_attempts THEN 'queued'
            WHEN o.status = 'released' THEN 'queued'
            ELSE o.status
        END,
        run_at = CASE
            WHEN o.status = 'failed' AND o.retryable AND j.attempt < j.max_attempts
                THEN coalesce($1::timestamptz, now()) + o.delay
            WHEN o.status = 'released' THEN coalesce($1::timestamptz, now())
            ELSE j.run_at
        END,
        attempt = CASE WHEN o.status = 'released' THEN j.attempt - 1 ELSE j.attempt END,
        result = CASE WHEN o.status = 'succeeded' THEN o.result ELSE j.result END,
        last_error = CASE WHEN o.status = 'failed' THEN o.error ELSE j.last_error END,
        lease_token = NULL,
        lease_expires_at = NULL,
        finished_at = CASE
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
           -- a released job's attempt was given back; journal the one it ran
           CASE WHEN status = 'released' THEN attempt + 1 ELSE attempt END,
           CASE WHEN status = 'failed' THEN error END
    FROM done
),
-- Requeued jobs that can run now wake their queue (see insert.sql).
woken AS (
    SELECT count(pg_notify('jobd_wake', queue)) AS queues
    FROM (SELECT DISTINCT queue FROM done WHERE state = 'queued' AND run_at <= updated_at) available
)
SELECT id, token, queue, state, run_at, run_at > updated_at AS later
FROM done, woken;
