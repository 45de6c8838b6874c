-- Applies an operator's transition that Go decided (job.Cancel,
-- job.Retry) for the row job_lock.sql locked, fenced by the state and
-- lease token read there. It decides nothing: $1 now, $2 job id, $3 the
-- state read and $4 the lease token read (the fence), $5 new state,
-- $6 run_at (NULL: kept), $7 attempt counter, $8 cancel requested,
-- $9 finished_at (NULL: cleared), $10 the entries to append to the
-- journal (a JSON array, job.MarshalJournal; NULL: none), $11
-- attempted_at (NULL: cleared), $12 whether to tell the running holder to
-- stop; a rerun's (job.Rerun) $13 new rerun counter (NULL: not a rerun,
-- and $14..$16 unused), $14 previous state, $15 new args (NULL: kept) and
-- $16 their args hash ('': none). A rerun keeps the result, readable
-- until the next claim clears it, and copies it to previous_result.
--
-- The lease is left as it is: a job that is not running holds none
-- (jobd_jobs_lease_held), and a running job asked to stop keeps its
-- holder's. A unique violation on jobd_jobs_active means an active twin
-- with the same args hash exists. A job made final (a queued job
-- canceled) that has a callback URL records its callback in the outbox,
-- in this same statement (store.WebhookStore). Returns the job as it now
-- is.
WITH changed AS (
    UPDATE jobd_jobs SET
        state = $5::text,
        run_at = coalesce($6::timestamptz, run_at),
        attempt = $7::integer,
        cancel_requested = $8::boolean,
        finished_at = $9::timestamptz,
        attempted_at = $11::timestamptz,
        rerun = coalesce($13::integer, rerun),
        previous_state = CASE WHEN $13::integer IS NULL THEN previous_state ELSE $14::text END,
        previous_result = CASE WHEN $13::integer IS NULL THEN previous_result ELSE result END,
        args = coalesce($15::jsonb, args),
        args_hash = CASE WHEN $15::jsonb IS NULL THEN args_hash ELSE nullif($16::text, '') END,
        journal = CASE WHEN $10::jsonb IS NULL THEN journal
                       ELSE coalesce(journal, '[]'::jsonb) || $10::jsonb END,
        updated_at = coalesce($1::timestamptz, now())
    WHERE id = $2
      AND state = $3::text
      AND lease_token IS NOT DISTINCT FROM $4::uuid
    RETURNING *
),
-- A job queued again that can run now wakes its queue; a running job
-- asked to stop wakes its holder (jobd_cancel), whatever its node.
-- PostgreSQL delivers both on commit. A CTE that only reads runs only
-- when the statement reads it, hence the join below.
woken AS (
    SELECT count(pg_notify('jobd_wake', queue)) AS queues
    FROM changed
    WHERE state = 'queued' AND run_at <= updated_at
),
stopped AS (
    SELECT count(pg_notify('jobd_cancel', id::text)) AS jobs
    FROM changed
    WHERE $12::boolean
),
-- A data-modifying CTE runs whether or not the statement reads it.
callbacks AS (
    INSERT INTO jobd_webhook_events (type, at, job_id, queue, kind, attempt, max_attempts,
                                     error, finished_at, url)
    SELECT 'callback', updated_at, id, queue, kind, attempt, max_attempts, last_error,
           finished_at, callback_url
    FROM changed
    WHERE callback_url IS NOT NULL AND finished_at IS NOT NULL
)
SELECT id, queue, kind, args, state, priority, run_at, attempt, max_attempts, lease_ttl,
       lease_token, lease_owner, lease_expires_at, heartbeat_at, lock_key, partition_key,
       idempotency_key, args_hash, cancel_requested, progress, checkpoint, result,
       last_error, created_at, started_at, finished_at, updated_at,
       requires, prefers, attempted_at, trace_parent,
       schedule, scheduled_for, timeout, deadline, rerun, previous_state, previous_result, callback_url,
       CASE WHEN workflow_id IS NOT NULL OR wait_for IS NOT NULL OR parent_id IS NOT NULL THEN json_build_array(
           workflow_id, workflow_ref, run_on, wait_for, dependencies, pending, canceled_by, parent_id, child_key) END
FROM changed, woken, stopped;
