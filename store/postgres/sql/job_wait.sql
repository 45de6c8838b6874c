-- Applies a wait that Go decided (job.Wait) to a running job this
-- transaction locked (lock_held.sql), fenced by its lease token: the
-- lease, its expiry and the deadline are cleared (a waiting or delayed
-- job holds none), wait_for and pending say what the job waits for,
-- signal_wait the signal it waits for ($12 NULL: kept), and the job is
-- durable. $1 now, $2 id, $3 token, $4 state, $5 run_at (NULL: kept), $6
-- attempt, $7 finished_at, $8 attempted_at, $9 wait_for, $10 pending,
-- $11 journal entries (NULL: none). Its queue is woken on commit: a job
-- due now can be claimed, and a limited queue has room.
WITH changed AS (
    UPDATE jobd_jobs j SET
        state = $4::text,
        run_at = coalesce($5::timestamptz, j.run_at),
        attempt = $6::integer,
        finished_at = $7::timestamptz,
        attempted_at = $8::timestamptz,
        lease_token = NULL,
        lease_expires_at = NULL,
        deadline = NULL,
        wait_for = $9::text,
        pending = $10::integer,
        signal_wait = coalesce($12::text, j.signal_wait),
        durable = true,
        journal = CASE WHEN $11::jsonb IS NULL THEN j.journal
                       ELSE coalesce(j.journal, '[]'::jsonb) || $11::jsonb END,
        updated_at = coalesce($1::timestamptz, now())
    WHERE j.id = $2
      AND j.state = 'running'
      AND j.lease_token = $3
    RETURNING j.*
)
SELECT id, queue, kind, args, state, priority, run_at, attempt, max_attempts, lease_ttl,
       lease_token, lease_owner, lease_expires_at, heartbeat_at, lock_key, partition_key,
       idempotency_key, args_hash, cancel_requested, progress, checkpoint, result,
       last_error, created_at, started_at, finished_at, updated_at,
       requires, prefers, attempted_at, trace_parent,
       schedule, scheduled_for, timeout, deadline, rerun, previous_state, previous_result, callback_url,
       CASE WHEN workflow_id IS NOT NULL OR wait_for IS NOT NULL OR parent_id IS NOT NULL THEN json_build_array(
           workflow_id, workflow_ref, run_on, wait_for, dependencies, pending, canceled_by, parent_id, child_key) END
FROM changed, LATERAL (SELECT pg_notify('jobd_wake', changed.queue)) woken;
