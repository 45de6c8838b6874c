-- Applies a wait that Go decided (job.Wait) to a running job, fenced by
-- its lease token: the lease, its expiry and the deadline are cleared
-- (a waiting or delayed job holds none), wait_for and pending are what
-- the job waits for, signal_wait the signal it waits for (:signal_wait
-- NULL: kept), and the job is durable. :entries as in job_set_state.sql.
UPDATE jobd_jobs
SET state = :state,
    run_at = coalesce(:run_at, run_at),
    attempt = :attempt,
    finished_at = :finished_at,
    attempted_at = :attempted_at,
    lease_token = NULL,
    lease_expires_at = NULL,
    deadline = NULL,
    wait_for = :wait_for,
    pending = :pending,
    signal_wait = coalesce(:signal_wait, signal_wait),
    durable = 1,
    journal = CASE
        WHEN :entries IS NULL THEN journal
        WHEN journal IS NULL THEN :entries
        ELSE json(substr(journal, 1, length(journal) - 1) || ',' || substr(:entries, 2))
    END,
    updated_at = :stamp
WHERE id = :id
  AND state = 'running'
  AND lease_token = :token
RETURNING id, queue, kind, args, state, priority, run_at, attempt, max_attempts, lease_ttl_us,
          lease_token, lease_owner, lease_expires_at, heartbeat_at, lock_key, partition_key,
          idempotency_key, args_hash, cancel_requested, progress, checkpoint, result,
          last_error, created_at, started_at, finished_at, updated_at,
          requires, prefers, attempted_at, trace_parent,
          schedule, scheduled_for, timeout_us, deadline, rerun, previous_state, previous_result, callback_url,
          CASE WHEN workflow_id IS NOT NULL OR wait_for IS NOT NULL OR parent_id IS NOT NULL THEN json_array(
              workflow_id, workflow_ref, run_on, wait_for, dependencies, pending, canceled_by, parent_id, child_key) END
