-- Claims up to $3 available jobs of queue $2, a limited one (flow.Limits),
-- for owner $4: claim.sql's claim (the same parameters, and the same
-- rules of lock_key, capabilities, cursor, lease, deadline and timeout),
-- within the queue's limits. It hands out at most the least of $3, the
-- queue's global room (global_limit less its running jobs) and its rate's
-- allowance, and to each partition_key at most its partition's room
-- (partition_limit less its running jobs) and, for a rate by
-- partition_key, its allowance; it skips the partitions under a throttle
-- of their own, and advances the rates' state by what it claimed.
--
-- It runs after flow_lock.sql in the same READ COMMITTED transaction, which
-- locked the queue's settings row: every limited claim of the queue holds
-- that lock until it commits, and this statement's snapshot, taken once
-- the lock is held, sees every claim the previous holder committed. So
-- the running jobs it counts are all of them, and no two claims hand out
-- the same room. It claims nothing unless this transaction holds the lock
-- (flow_lock.sql sets jobd.flow_lock to the queue's name): a lock skipped,
-- or a transaction that is not READ COMMITTED, claims nothing.
--
-- Running jobs are counted from the lease index, which holds every
-- running job (jobd_jobs_lease_held) and is small: no index serves the
-- running jobs of one queue, and none is added, for every index on
-- jobd_jobs costs every claim and finish of every queue. Candidates come
-- from an ordered walk of the claim index, as in claim.sql, which skips
-- the partitions that can start nothing now (full, throttled, out of
-- rate), so that one at the head of the queue does not hide the others;
-- the walk takes twice the room and a few more, for the candidates a
-- partition's room or a lock_key then leaves out. It locks them, as
-- claim.sql does (FOR UPDATE SKIP LOCKED: a job an operator is canceling
-- is skipped, and a candidate is still queued when it is claimed), so
-- that the UPDATE finds its jobs by primary key and by nothing else: a
-- test of their state there would let the planner walk the claim index
-- for them (the index's predicate), once per job picked, on a table
-- whose statistics say it is small. TestPlansAreStable checks the plan.
WITH clock AS (
    SELECT coalesce($1::timestamptz, now()) AS now
),
-- The queue's settings, when this transaction holds its lock and the queue
-- is neither paused nor throttled; no row otherwise, and nothing is
-- claimed.
settings AS MATERIALIZED (
    SELECT q.global_limit, q.partition_limit, q.rate_by IS NOT NULL AS rate_by_partition,
           coalesce(q.rate_burst, 1) AS bursts, q.rate_tat,
           q.throttle_by IS NOT NULL AS throttle_by_partition,
           jobd_rate_interval(q.rate_period, q.rate_limit) AS interval_ns
    FROM jobd_queues q
    WHERE q.name = $2
      AND current_setting('jobd.flow_lock', true) = $2
      AND NOT q.paused
      AND (q.throttled_until IS NULL OR q.throttled_until <= (SELECT now FROM clock))
),
-- The queue's running jobs by partition ('' for the jobs without one),
-- counted only when a limit needs them.
running AS MATERIALIZED (
    SELECT coalesce(r.partition_key, '') AS partition_key, count(*) AS n
    FROM jobd_jobs r
    WHERE r.lease_expires_at IS NOT NULL
      AND r.queue = $2
      AND EXISTS (SELECT 1 FROM settings s
                  WHERE s.global_limit IS NOT NULL OR s.partition_limit IS NOT NULL)
    GROUP BY 1
),
-- The state of the partitions that have any in force: a throttle not yet
-- passed (with a throttle_by of partition_key), a rate by partition_key
-- whose next start is still ahead.
partition_state AS MATERIALIZED (
    SELECT p.partition_key,
           s.throttle_by_partition AND p.throttled_until > (SELECT now FROM clock) AS throttled,
           CASE WHEN s.rate_by_partition THEN p.rate_tat END AS rate_tat
    FROM jobd_queue_partitions p
    CROSS JOIN settings s
    WHERE p.queue = $2
      AND (p.throttled_until > (SELECT now FROM clock) OR p.rate_tat > (SELECT now FROM clock))
),
-- How many jobs each partition with running jobs or state may start now;
-- NULL for no bound. (A partition with neither may start fresh_room.) One
-- aggregate, not joins: the planner, which cannot know how many rows
-- these CTEs hold, would nest loops over them.
partition_room AS MATERIALIZED (
    SELECT k.partition_key,
           least(s.partition_limit - sum(k.running),
                 CASE WHEN s.rate_by_partition
                      THEN jobd_rate_room(s.interval_ns, s.bursts, max(k.rate_tat), (SELECT now FROM clock)) END,
                 CASE WHEN bool_or(k.throttled) THEN 0 END) AS room
    FROM (SELECT partition_key, n AS running, NULL::timestamptz AS rate_tat, false AS throttled FROM running
          UNION ALL
          SELECT partition_key, 0, rate_tat, throttled FROM partition_state) k
    CROSS JOIN settings s
    GROUP BY k.partition_key, s.partition_limit, s.rate_by_partition, s.interval_ns, s.bursts
),
-- The most this claim hands out (room, never NULL), the room of a
-- partition with nothing running and no state (NULL: no bound), the
-- rooms of the others by partition_key (a JSON object, looked up per
-- candidate: no join), and the partitions that can start nothing now.
budget AS MATERIALIZED (
    SELECT least($3::bigint,
                 s.global_limit - (SELECT coalesce(sum(n), 0) FROM running),
                 CASE WHEN NOT s.rate_by_partition
                      THEN jobd_rate_room(s.interval_ns, s.bursts, s.rate_tat, (SELECT now FROM clock)) END) AS room,
           least(s.partition_limit, CASE WHEN s.rate_by_partition THEN s.bursts END) AS fresh_room,
           coalesce((SELECT jsonb_object_agg(partition_key, room) FROM partition_room WHERE room IS NOT NULL),
                    '{}') AS rooms,
           coalesce((SELECT array_agg(partition_key) FROM partition_room WHERE room <= 0), '{}') AS blocked
    FROM settings s
),
candidate AS MATERIALIZED (
    SELECT id, lock_key, priority, run_at, coalesce(partition_key, '') AS partition_key
    FROM jobd_jobs j
    WHERE state = 'queued'
      AND queue = $2
      AND run_at <= coalesce($1::timestamptz, now())
      -- Evaluated once: no room (or no lock, or a paused or throttled
      -- queue), no walk.
      AND (SELECT room FROM budget) > 0
      AND coalesce(j.partition_key, '') <> ALL ((SELECT blocked FROM budget)::text[])
      -- A job whose lock_key a running job holds is skipped here, so it
      -- does not take a place in the LIMIT. OFFSET 0 keeps the planner
      -- from turning this probe into a hash of every running job's key.
      AND (lock_key IS NULL OR NOT EXISTS (
            SELECT 1 FROM jobd_jobs r
            WHERE r.lock_key = j.lock_key AND r.state = 'running'
            OFFSET 0))
      -- Capability rules. A job without any (NULL, never '{}') pays two
      -- IS NULL tests here and nothing else.
      AND (j.requires IS NULL OR j.requires <@ $5::text[])
      AND (j.prefers IS NULL
           OR j.prefers <@ $5::text[]
           OR j.run_at + $7::interval <= coalesce($1::timestamptz, now())
           -- Starvation-free: a claimer without the preferred
           -- capabilities waits only while someone else who has them is
           -- online, enabled and has room.
           OR NOT EXISTS (
                SELECT 1 FROM jobd_workers w
                WHERE w.status IN ('idle', 'active')
                  AND NOT w.disabled
                  AND w.capabilities @> j.prefers
                  AND w.id IS DISTINCT FROM $6::text))
    ORDER BY priority, run_at, id
    LIMIT (SELECT 2 * room + 16 FROM budget)
    FOR UPDATE SKIP LOCKED
),
-- Of several candidates sharing a lock_key, only the best (see claim.sql).
deduped AS (
    SELECT id, partition_key, priority, run_at FROM candidate WHERE lock_key IS NULL
    UNION ALL
    (SELECT DISTINCT ON (lock_key) id, partition_key, priority, run_at
     FROM candidate
     WHERE lock_key IS NOT NULL
     ORDER BY lock_key, priority, run_at, id)
),
-- The best of each partition, as many as its room.
allowed AS (
    SELECT d.id, d.priority, d.run_at
    FROM (SELECT deduped.*,
                 row_number() OVER (PARTITION BY partition_key ORDER BY priority, run_at, id) AS nth
          FROM deduped) d
    WHERE d.nth <= coalesce(((SELECT rooms FROM budget) ->> d.partition_key)::bigint,
                            (SELECT fresh_room FROM budget), d.nth)
),
-- The best of those, as many as the queue's room.
picked AS (
    SELECT id
    FROM (SELECT id, row_number() OVER (ORDER BY priority, run_at, id) AS nth FROM allowed) a
    WHERE a.nth <= (SELECT room FROM budget)
),
claimed AS (
    UPDATE jobd_jobs j SET
        state = 'running',
        attempt = j.attempt + 1,
        lease_token = gen_random_uuid(),
        lease_owner = $4,
        lease_expires_at = least(coalesce($1::timestamptz, now()) + j.lease_ttl,
                                 coalesce($1::timestamptz, now()) + coalesce(j.timeout, $8::interval)),
        deadline = coalesce($1::timestamptz, now()) + coalesce(j.timeout, $8::interval),
        result = NULL,
        heartbeat_at = coalesce($1::timestamptz, now()),
        started_at = coalesce(j.started_at, $1::timestamptz, now()),
        attempted_at = coalesce($1::timestamptz, now()),
        updated_at = coalesce($1::timestamptz, now())
    FROM picked
    -- A probe of the primary key per job (see claim.sql).
    WHERE j.id = ANY (ARRAY[picked.id])
    RETURNING j.id, j.queue, j.kind, j.args, j.state, j.priority, j.run_at, j.attempt,
              j.max_attempts, j.lease_ttl, j.lease_token, j.lease_owner, j.lease_expires_at,
              j.heartbeat_at, j.lock_key, j.partition_key, j.idempotency_key, j.args_hash,
              j.cancel_requested, j.progress, j.checkpoint, j.result, j.last_error,
              j.created_at, j.started_at, j.finished_at, j.updated_at,
              j.requires, j.prefers, j.attempted_at, j.trace_parent,
              j.schedule, j.scheduled_for, j.timeout, j.deadline, j.rerun, j.previous_state, j.previous_result, j.callback_url,
              j.workflow_id, j.workflow_ref, j.run_on, j.wait_for, j.dependencies, j.pending, j.canceled_by,
              j.durable, j.signal_wait, j.parent_id, j.child_key
),
-- The rate's state advances by the starts claimed: the queue's, on its row
-- (which this transaction holds locked), or each partition's. A
-- data-modifying CTE runs whether or not the statement reads it.
queue_rate AS (
    UPDATE jobd_queues q
    SET rate_tat = jobd_rate_next(s.interval_ns, q.rate_tat, (SELECT now FROM clock), c.n)
    FROM settings s, (SELECT count(*) AS n FROM claimed) c
    WHERE q.name = $2
      AND s.interval_ns IS NOT NULL
      AND NOT s.rate_by_partition
      AND c.n > 0
),
-- A partition's new state is computed as if it had none (n intervals
-- after jobd_rate_floor), and, where it has a row, moved on from the
-- row's state (or the floor, if later) by as much: jobd_rate_next's result either way, without a join.
partition_rate AS (
    INSERT INTO jobd_queue_partitions AS p (queue, partition_key, rate_tat)
    SELECT $2, c.partition_key, jobd_rate_next(s.interval_ns, NULL, (SELECT now FROM clock), c.n)
    FROM (SELECT coalesce(partition_key, '') AS partition_key, count(*) AS n FROM claimed GROUP BY 1) c
    CROSS JOIN settings s
    WHERE s.rate_by_partition
    ON CONFLICT (queue, partition_key) DO UPDATE
        SET rate_tat = greatest(p.rate_tat, jobd_rate_floor((SELECT interval_ns FROM settings), (SELECT now FROM clock)))
                       + (excluded.rate_tat - jobd_rate_floor((SELECT interval_ns FROM settings), (SELECT now FROM clock)))
)
SELECT id, queue, kind, args, state, priority, run_at, attempt, max_attempts, lease_ttl,
       lease_token, lease_owner, lease_expires_at, heartbeat_at, lock_key, partition_key,
       idempotency_key, args_hash, cancel_requested, progress, checkpoint, result,
       last_error, created_at, started_at, finished_at, updated_at,
       requires, prefers, attempted_at, trace_parent,
       schedule, scheduled_for, timeout, deadline, rerun, previous_state, previous_result, callback_url,
       CASE WHEN workflow_id IS NOT NULL OR wait_for IS NOT NULL OR parent_id IS NOT NULL THEN json_build_array(
           workflow_id, workflow_ref, run_on, wait_for, dependencies, pending, canceled_by, parent_id, child_key) END,
       -- A workflow task's inputs: its dependencies' refs, states,
       -- results and errors (job.Input), read here, at its claim, and
       -- never copied into its row. A job with no dependencies (any job
       -- outside a workflow) pays the one test: CASE evaluates the
       -- subquery only when it holds.
       CASE WHEN dependencies > 0 THEN (
           SELECT jsonb_agg(jsonb_build_object('ref', d.workflow_ref, 'state', d.state,
                                               'result', d.result, 'error', d.last_error))
           FROM jobd_workflow_edges e
           JOIN jobd_jobs d ON d.id = ANY (ARRAY[e.depends_on])
           WHERE e.job_id = claimed.id)
       END AS inputs,
       -- What a durable job (it recorded a step, spawned a child or
       -- waited) resumes from: its steps, its children by key, the signal
       -- of its last signal wait (store.DecodeResume). Any other job pays
       -- the one test.
       CASE WHEN durable THEN jsonb_build_object(
           'steps', (SELECT jsonb_agg(jsonb_build_object('name', s.name, 'result', s.result,
                                                         'attempt', s.attempt, 'started_at', s.started_at,
                                                         'finished_at', s.finished_at)
                                      ORDER BY s.finished_at, s.name)
                     FROM jobd_job_steps s WHERE s.job_id = claimed.id),
           'children', (SELECT jsonb_agg(jsonb_build_object('key', c.child_key, 'id', c.id, 'state', c.state,
                                                            'result', c.result, 'error', c.last_error))
                        FROM jobd_jobs c WHERE c.parent_id = claimed.id),
           'signal', CASE WHEN signal_wait IS NOT NULL THEN (
               SELECT jsonb_build_object('name', claimed.signal_wait, 'payload', g.payload,
                                         'delivered', g.delivered_at IS NOT NULL)
               FROM (SELECT 1) one
               LEFT JOIN jobd_signals g ON g.job_id = claimed.id AND g.name = claimed.signal_wait)
           END)
       END AS resume
FROM claimed
ORDER BY priority, run_at, id;
