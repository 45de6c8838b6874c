-- Applies transitions of workflow tasks that Go decided (the workflow
-- step: store.DecidePropagate, DecideRetry, DecideCancel; an operator's
-- cancel or retry of a task) for rows this transaction locked, each
-- fenced by the state its facts were read with. It decides nothing.
-- $1 now; one element per task: $2 ids, $3 the states read (the fence),
-- $4 new states, $5 run_at (NULL: kept), $6 attempt counters, $7 cancel
-- requested, $8 finished_at (NULL: cleared), $9 last errors (NULL:
-- kept), $10 attempted_at (NULL: cleared), $11 the entries to append to
-- the journal (a JSON array, job.MarshalJournal; NULL: none), $12 what
-- each waits for (NULL: nothing), $13 pending dependencies, $14 the
-- dependency that canceled it (NULL: none), $15 whether to tell its
-- running holder to stop.
--
-- The lease is left as it is: these transitions never leave running (a
-- running task asked to stop keeps its holder's). A task queued again
-- that can run now wakes its queue; a running one asked to stop wakes its
-- holder; a task made final that has a callback URL records its callback
-- in the outbox; all in this statement, delivered on commit. Returns the
-- tasks as they now are.
WITH changed AS (
    UPDATE jobd_jobs j SET
        state = d.state,
        run_at = coalesce(d.run_at, j.run_at),
        attempt = d.attempt,
        cancel_requested = d.cancel_requested,
        finished_at = d.finished_at,
        last_error = coalesce(d.last_error, j.last_error),
        attempted_at = d.attempted_at,
        journal = CASE WHEN d.entries IS NULL THEN j.journal
                       ELSE coalesce(j.journal, '[]'::jsonb) || d.entries END,
        wait_for = d.wait_for,
        pending = d.pending,
        canceled_by = d.canceled_by,
        updated_at = coalesce($1::timestamptz, now())
    FROM unnest($2::uuid[], $3::text[], $4::text[], $5::timestamptz[], $6::integer[], $7::boolean[],
                $8::timestamptz[], $9::text[], $10::timestamptz[], $11::jsonb[], $12::text[],
                $13::integer[], $14::uuid[], $15::boolean[])
        AS d(id, from_state, state, run_at, attempt, cancel_requested, finished_at, last_error,
             attempted_at, entries, wait_for, pending, canceled_by, stop)
    WHERE j.id = ANY (ARRAY[d.id])
      AND j.state = d.from_state
    RETURNING j.*, d.stop
),
woken AS (
    SELECT count(pg_notify('jobd_wake', queue)) AS queues
    FROM (SELECT DISTINCT queue FROM changed WHERE state = 'queued' AND run_at <= updated_at) available
),
stopped AS (
    SELECT count(pg_notify('jobd_cancel', id::text)) AS jobs
    FROM changed
    WHERE stop
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
