-- Applies transitions out of running that Go decided (job.Finish,
-- job.Rescue, job.TimeOut) for rows this transaction locked, each fenced by the state
-- and lease token its facts were read with. It decides nothing: every
-- value comes from the decision. $1 now; one element per job: $2 ids,
-- $3 lease tokens, $4 new states, $5 run_at (NULL: kept), $6 attempt
-- counters, $7 finished_at (NULL: cleared), $8 results (NULL: kept),
-- $9 last errors (NULL: kept), $10 the entries to append to the journal
-- (a JSON array, job.MarshalJournal; NULL: none), $11 attempted_at (NULL:
-- cleared), $12 the outbox event each records (store.AlertOf; NULL:
-- none); $13 the queues that count their running jobs (see
-- finish_succeeded.sql); $14 the holder's outcome that decided it, which
-- the row remembers with the lease token and owner (NULL: none, a rescue
-- or a time-out, which leaves what the row remembers as it is).
--
-- Returns the ids it changed. Jobs that went back to the queue and can
-- run now wake their queue (see insert.sql), and so does every job of a
-- queue of $13: it left the running state, making room (each queue once). A job made final that has a
-- callback URL records its callback in the outbox, and a decided event is
-- recorded there too, in this same statement (store.WebhookStore).
WITH done AS (
    UPDATE jobd_jobs j SET
        state = d.state,
        run_at = coalesce(d.run_at, j.run_at),
        attempt = d.attempt,
        finished_at = d.finished_at,
        result = coalesce(d.result, j.result),
        last_error = coalesce(d.last_error, j.last_error),
        lease_token = NULL,
        lease_expires_at = NULL,
        deadline = NULL,
        attempted_at = d.attempted_at,
        outcome_token = CASE WHEN d.outcome IS NULL THEN j.outcome_token ELSE d.token END,
        outcome = coalesce(d.outcome, j.outcome),
        outcome_owner = CASE WHEN d.outcome IS NULL THEN j.outcome_owner ELSE j.lease_owner END,
        journal = CASE WHEN d.entries IS NULL THEN j.journal
                       ELSE coalesce(j.journal, '[]'::jsonb) || d.entries END,
        updated_at = coalesce($1::timestamptz, now())
    FROM unnest($2::uuid[], $3::uuid[], $4::text[], $5::timestamptz[], $6::integer[],
                $7::timestamptz[], $8::jsonb[], $9::text[], $10::jsonb[], $11::timestamptz[],
                $12::text[], $14::text[])
        AS d(id, token, state, run_at, attempt, finished_at, result, last_error,
             entries, attempted_at, alert, outcome)
    -- A probe of the primary key per job whatever the statistics, never a
    -- walk of it (see claim.sql).
    WHERE j.id = ANY (ARRAY[d.id])
      AND j.state = 'running'
      AND j.lease_token = d.token
    RETURNING j.id, j.queue, j.kind, j.state, j.run_at, j.updated_at, j.attempt, j.max_attempts,
              j.last_error, j.finished_at, j.callback_url, d.alert
),
-- A CTE that only reads runs only when the statement reads it, hence the
-- join below; PostgreSQL delivers the notifications when the transaction
-- commits.
woken AS (
    SELECT count(pg_notify('jobd_wake', queue)) AS queues
    FROM (SELECT DISTINCT queue FROM done
          WHERE (state = 'queued' AND run_at <= updated_at) OR queue = ANY ($13::text[])) available
),
-- A data-modifying CTE runs whether or not the statement reads it.
outbox AS (
    INSERT INTO jobd_webhook_events (type, at, job_id, queue, kind, attempt, max_attempts,
                                     error, finished_at, url)
    SELECT 'callback', updated_at, id, queue, kind, attempt, max_attempts, last_error,
           finished_at, callback_url
    FROM done
    WHERE callback_url IS NOT NULL AND finished_at IS NOT NULL
    UNION ALL
    SELECT alert, updated_at, id, queue, kind, attempt, max_attempts, last_error,
           finished_at, NULL
    FROM done
    WHERE alert IS NOT NULL
)
SELECT id FROM done, woken;
