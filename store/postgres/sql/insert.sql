-- Inserts a batch of jobs in one statement. It writes no journal entry:
-- created_at implies the "queued" one (see job.Journal).
-- $1 now (NULL: the database's now()); $2.. one array per column, one
-- element per job, in the caller's order.
--
-- ON CONFLICT DO NOTHING covers both dedupe indexes (idempotency key and
-- active args hash): a row that would duplicate a committed job, a job
-- inserted by a concurrent transaction (the insert waits for it to commit
-- or roll back) or an earlier row of this same batch is skipped, and the
-- driver then looks its twin up (insert_lookup.sql).
WITH inserted AS (
    INSERT INTO jobd_jobs (
        id, queue, kind, args, state, priority, run_at, max_attempts, lease_ttl,
        lock_key, partition_key, idempotency_key, args_hash, created_at, updated_at,
        requires, prefers, trace_parent, timeout, schedule, scheduled_for, callback_url,
        idempotency_fingerprint
    )
    SELECT p.id, p.queue, p.kind, p.args, 'queued', p.priority,
           coalesce(p.run_at, $1::timestamptz, now()), p.max_attempts, p.lease_ttl,
           nullif(p.lock_key, ''), nullif(p.partition_key, ''),
           nullif(p.idempotency_key, ''), nullif(p.args_hash, ''),
           coalesce($1::timestamptz, now()), coalesce($1::timestamptz, now()),
           -- $14 and $15 hold each job's requires and prefers as an array
           -- literal ('{cuda,gpu}', NULL for none): unnest cannot take an
           -- array of arrays of different lengths.
           p.requires::text[], p.prefers::text[], nullif(p.trace_parent, ''),
           -- $17 timeouts (NULL: none), $18 schedules ('': none), $19
           -- their ticks (NULL: none); $20 callback URLs ('': none); $21
           -- the fingerprints of the requests of the keys ('': none).
           p.timeout, nullif(p.schedule, ''), p.scheduled_for,
           nullif(p.callback_url, ''), nullif(p.fingerprint, '')
    FROM unnest(
        $2::uuid[], $3::text[], $4::text[], $5::jsonb[], $6::integer[], $7::timestamptz[],
        $8::integer[], $9::interval[], $10::text[], $11::text[], $12::text[], $13::text[],
        $14::text[], $15::text[], $16::text[], $17::interval[], $18::text[], $19::timestamptz[], $20::text[],
        $21::text[]
    ) WITH ORDINALITY AS p(
        id, queue, kind, args, priority, run_at,
        max_attempts, lease_ttl, lock_key, partition_key, idempotency_key, args_hash,
        requires, prefers, trace_parent, timeout, schedule, scheduled_for, callback_url,
        fingerprint, ord
    )
    ORDER BY p.ord -- within a batch, the first of two duplicates wins
    ON CONFLICT DO NOTHING
    RETURNING *
),
-- One wake-up per queue that got a job it can run now, with a lower
-- bound of the new jobs' claim order: the queue, the least priority and
-- the earliest run_at (in µs since the epoch), separated by the unit
-- separator, which no queue name holds (see Listen). A CTE that only
-- reads runs only when the statement reads it, hence the join below;
-- PostgreSQL delivers the notifications when the transaction commits.
woken AS (
    SELECT count(pg_notify('jobd_wake', queue || chr(31) || priority || chr(31) || run_at_us)) AS queues
    FROM (
        SELECT queue, min(priority) AS priority,
               floor(extract(epoch FROM min(run_at)) * 1000000)::bigint AS run_at_us
        FROM inserted
        WHERE run_at <= coalesce($1::timestamptz, now())
        GROUP BY queue
    ) available
)
SELECT id, queue, kind, args, state, priority, run_at, attempt, max_attempts, lease_ttl,
       lease_token, lease_owner, lease_expires_at, heartbeat_at, lock_key, partition_key,
       idempotency_key, args_hash, cancel_requested, progress, checkpoint, result,
       last_error, created_at, started_at, finished_at, updated_at,
       requires, prefers, attempted_at, trace_parent,
       schedule, scheduled_for, timeout, deadline, rerun, previous_state, previous_result, callback_url,
       CASE WHEN workflow_id IS NOT NULL OR wait_for IS NOT NULL OR parent_id IS NOT NULL THEN json_build_array(
           workflow_id, workflow_ref, run_on, wait_for, dependencies, pending, canceled_by, parent_id, child_key) END
FROM inserted, woken;
