-- The tasks of workflow :id, whole, by id (each after its dependencies),
-- found by the workflow index.
SELECT id, queue, kind, args, state, priority, run_at, attempt, max_attempts, lease_ttl_us,
          lease_token, lease_owner, lease_expires_at, heartbeat_at, lock_key, partition_key,
          idempotency_key, args_hash, cancel_requested, progress, checkpoint, result,
          last_error, created_at, started_at, finished_at, updated_at,
          requires, prefers, attempted_at, trace_parent,
          schedule, scheduled_for, timeout_us, deadline, rerun, previous_state, previous_result, callback_url,
          CASE WHEN workflow_id IS NOT NULL OR wait_for IS NOT NULL OR parent_id IS NOT NULL THEN json_array(
              workflow_id, workflow_ref, run_on, wait_for, dependencies, pending, canceled_by, parent_id, child_key) END
FROM jobd_jobs
WHERE workflow_id = :id
ORDER BY id
