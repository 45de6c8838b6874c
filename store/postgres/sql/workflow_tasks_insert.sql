-- Inserts the tasks of workflow $2 and its edges, in the round that
-- inserts its row (workflow_insert.sql), and only when that row was
-- inserted: a workflow its idempotency key found inserts nothing here.
-- It writes no journal entry: created_at implies the first ("queued", or
-- "waiting" for a task with dependencies: see job.Journal).
-- $1 now (NULL: the database's now()); $3.. one array per column, one
-- element per task: $3 ids, $4 queues, $5 kinds, $6 args, $7 priorities,
-- $8 run_at (NULL: now), $9 max_attempts, $10 lease TTLs, $11 lock keys,
-- $12 partition keys ('': none), $13 and $14 requires and prefers (array
-- literals, NULL: none), $15 traceparents, $16 timeouts (NULL: none),
-- $17 schedules, $18 their ticks, $19 callback URLs ('': none; the whole
-- array NULL when no task has one), $20 refs, $21 run_on, $22 the number
-- of each task's dependencies; $23 and $24 the edges (a task, a task it
-- depends on). A task with dependencies is waiting (for
-- 'dependencies', none final yet); any other is queued.
WITH inserted AS (
    INSERT INTO jobd_jobs (
        id, queue, kind, args, state, priority, run_at, max_attempts, lease_ttl,
        lock_key, partition_key, created_at, updated_at,
        requires, prefers, trace_parent, timeout, schedule, scheduled_for, callback_url,
        workflow_id, workflow_ref, run_on, wait_for, dependencies, pending
    )
    SELECT p.id, p.queue, p.kind, p.args, CASE WHEN p.deps > 0 THEN 'waiting' ELSE 'queued' END,
           p.priority, coalesce(p.run_at, $1::timestamptz, now()), p.max_attempts, p.lease_ttl,
           nullif(p.lock_key, ''), nullif(p.partition_key, ''),
           coalesce($1::timestamptz, now()), coalesce($1::timestamptz, now()),
           p.requires::text[], p.prefers::text[], nullif(p.trace_parent, ''),
           p.timeout, nullif(p.schedule, ''), p.scheduled_for, nullif(p.callback_url, ''),
           $2::uuid, p.ref, p.run_on, CASE WHEN p.deps > 0 THEN 'dependencies' END, p.deps, p.deps
    FROM unnest(
        $3::uuid[], $4::text[], $5::text[], $6::jsonb[], $7::integer[], $8::timestamptz[],
        $9::integer[], $10::interval[], $11::text[], $12::text[],
        $13::text[], $14::text[], $15::text[], $16::interval[], $17::text[], $18::timestamptz[],
        $19::text[], $20::text[], $21::text[], $22::integer[]
    ) AS p(
        id, queue, kind, args, priority, run_at, max_attempts, lease_ttl, lock_key, partition_key,
        requires, prefers, trace_parent, timeout, schedule, scheduled_for, callback_url,
        ref, run_on, deps
    )
    WHERE EXISTS (SELECT 1 FROM jobd_workflows w WHERE w.id = $2::uuid)
    RETURNING *
),
edges AS (
    INSERT INTO jobd_workflow_edges (job_id, depends_on)
    SELECT e.job_id, e.depends_on
    FROM unnest($23::uuid[], $24::uuid[]) AS e(job_id, depends_on)
    WHERE EXISTS (SELECT 1 FROM jobd_workflows w WHERE w.id = $2::uuid)
),
-- One wake-up per queue that got a task it can run now, as insert.sql's.
woken AS (
    SELECT count(pg_notify('jobd_wake', queue || chr(31) || priority || chr(31) || run_at_us)) AS queues
    FROM (
        SELECT queue, min(priority) AS priority,
               floor(extract(epoch FROM min(run_at)) * 1000000)::bigint AS run_at_us
        FROM inserted
        WHERE state = 'queued' AND run_at <= coalesce($1::timestamptz, now())
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
