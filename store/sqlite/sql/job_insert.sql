-- Creates one queued job, or nothing when its idempotency key is taken or,
-- with active dedupe, a queued or running twin holds its args hash (the
-- partial unique indexes). The caller then looks that job up instead. It
-- writes no journal entry: created_at implies the "queued" one (see
-- job.Journal).
INSERT INTO jobd_jobs (
    id, queue, kind, args, state, priority, run_at, max_attempts, lease_ttl_us,
    lock_key, partition_key, idempotency_key, args_hash, created_at, updated_at,
    requires, prefers, trace_parent, timeout_us, schedule, scheduled_for, callback_url,
    idempotency_fingerprint
) VALUES (
    :id, :queue, :kind, :args, 'queued', :priority, :run_at, :max_attempts, :lease_ttl_us,
    nullif(:lock_key, ''), nullif(:partition_key, ''), nullif(:idempotency_key, ''),
    nullif(:args_hash, ''), :now, :stamp, :requires, :prefers,
    nullif(:trace_parent, ''), :timeout_us, nullif(:schedule, ''), :scheduled_for, nullif(:callback_url, ''),
    nullif(:idempotency_fingerprint, '')
)
ON CONFLICT DO NOTHING
RETURNING id, queue, kind, args, state, priority, run_at, attempt, max_attempts, lease_ttl_us,
          lease_token, lease_owner, lease_expires_at, heartbeat_at, lock_key, partition_key,
          idempotency_key, args_hash, cancel_requested, progress, checkpoint, result,
          last_error, created_at, started_at, finished_at, updated_at,
          requires, prefers, attempted_at, trace_parent,
          schedule, scheduled_for, timeout_us, deadline, rerun, previous_state, previous_result, callback_url,
          CASE WHEN workflow_id IS NOT NULL OR wait_for IS NOT NULL OR parent_id IS NOT NULL THEN json_array(
              workflow_id, workflow_ref, run_on, wait_for, dependencies, pending, canceled_by, parent_id, child_key) END
