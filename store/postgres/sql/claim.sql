-- Claims up to $3 available jobs of queue $2 for owner $4; $1 now (NULL:
-- the database's now()); $5 the claimer's capabilities, $6 its worker id
-- (NULL for a node), $7 the prefer window, $8 the queue's default
-- timeout (NULL: none) for the jobs without one of their own.
--
-- An attempt under a timeout gets its deadline (now + the timeout), and
-- its lease never outlives it: PostgreSQL's least() ignores a NULL
-- deadline. The claim clears the result: a queued job has none, but for
-- a re-run's, which stays readable until this claim (and which the
-- handler receives as previous_result).
--
-- The claim writes no journal entry: attempted_at (with lease_owner, the
-- entry's detail, and the attempt) implies its "claimed" entry until a
-- later transition stores it (see job.Journal).
--
-- The plan must not depend on the table's statistics (the statement is
-- prepared once per connection and may run on a generic plan made when the
-- table was empty): the candidates come from an ordered scan of the partial
-- claim index, each lock_key is checked by a probe of the lock index, and
-- the claimed rows are found by primary key. TestPlansAreStable checks it,
-- generic and custom plans alike, on an empty and on a big table.
WITH candidate AS (
    SELECT id, lock_key, priority, run_at
    FROM jobd_jobs j
    WHERE state = 'queued'
      AND queue = $2
      AND run_at <= coalesce($1::timestamptz, now())
      -- A job whose lock_key a running job holds is skipped here, so it
      -- does not take a place in the LIMIT. OFFSET 0 keeps the planner
      -- from turning this probe into a hash of every running job's key.
      AND (lock_key IS NULL OR NOT EXISTS (
            SELECT 1 FROM jobd_jobs r
            WHERE r.lock_key = j.lock_key AND r.state = 'running'
            OFFSET 0))
      -- The queue's settings, one probe of their primary key: a paused
      -- queue is not claimed from, nor a throttled one, nor a limited one,
      -- whose claims take claim_limited.sql (serialized, counting what
      -- runs). A node whose view of the limited queues is stale, which
      -- still claims a newly limited queue by this statement, claims
      -- nothing from it.
      AND NOT EXISTS (
            SELECT 1 FROM jobd_queues q
            WHERE q.name = $2
              AND (q.paused OR q.limited
                   OR q.throttled_until > coalesce($1::timestamptz, now())))
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
    LIMIT $3
    FOR UPDATE SKIP LOCKED
),
-- Of several candidates sharing a lock_key, only the best is claimed. Two
-- claimers that each pick a different job of one free lock_key collide on
-- the unique lock index; the driver retries the loser, which then skips it.
picked AS (
    SELECT id FROM candidate WHERE lock_key IS NULL
    UNION ALL
    (SELECT DISTINCT ON (lock_key) id
     FROM candidate
     WHERE lock_key IS NOT NULL
     ORDER BY lock_key, priority, run_at, id)
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
    -- j.id = ANY (ARRAY[picked.id]), not j.id = picked.id: the same test,
    -- but not a join clause the planner can merge or hash on, so a walk of
    -- the whole primary key is never a candidate plan: each picked job is
    -- a probe of it. With the statistics of a drained, vacuumed table
    -- (reltuples 0) every index scan costs one page, and the walk looked
    -- as cheap as a probe (TestPlansAreStable).
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
