-- Inserts one task of workflow :workflow_id: waiting for its
-- dependencies when it has some (:dependencies > 0), queued otherwise.
-- It writes no journal entry: created_at implies the first ("queued",
-- or "waiting": see job.Journal). A task has no idempotency key nor
-- args hash: nothing can conflict.
INSERT INTO jobd_jobs (
    id, queue, kind, args, state, priority, run_at, max_attempts, lease_ttl_us,
    lock_key, partition_key, created_at, updated_at,
    requires, prefers, trace_parent, timeout_us, schedule, scheduled_for, callback_url,
    workflow_id, workflow_ref, run_on, wait_for, dependencies, pending
) VALUES (
    :id, :queue, :kind, :args, CASE WHEN :dependencies > 0 THEN 'waiting' ELSE 'queued' END,
    :priority, :run_at, :max_attempts, :lease_ttl_us,
    nullif(:lock_key, ''), nullif(:partition_key, ''), :now, :stamp, :requires, :prefers,
    nullif(:trace_parent, ''), :timeout_us, nullif(:schedule, ''), :scheduled_for, nullif(:callback_url, ''),
    :workflow_id, :ref, :run_on, CASE WHEN :dependencies > 0 THEN 'dependencies' END,
    :dependencies, :dependencies
)
RETURNING id, queue, kind, args, state, priority, run_at, attempt, max_attempts, lease_ttl_us,
          lease_token, lease_owner, lease_expires_at, heartbeat_at, lock_key, partition_key,
          idempotency_key, args_hash, cancel_requested, progress, checkpoint, result,
          last_error, created_at, started_at, finished_at, updated_at,
          requires, prefers, attempted_at, trace_parent,
          schedule, scheduled_for, timeout_us, deadline, rerun, previous_state, previous_result, callback_url,
          CASE WHEN workflow_id IS NOT NULL OR wait_for IS NOT NULL OR parent_id IS NOT NULL THEN json_array(
              workflow_id, workflow_ref, run_on, wait_for, dependencies, pending, canceled_by, parent_id, child_key) END
