-- Locks one job for an operator's transition (JobCancel, JobRetry), which
-- Go decides from the row read here (job.Cancel, job.Retry) and
-- job_set_state.sql applies in the same transaction. $1 now, $2 job id.
-- The row is the latest committed version (FOR UPDATE waits for a
-- concurrent writer and reads what it wrote); the last column is the
-- transaction's time. No row when there is no such job.
SELECT id, queue, kind, args, state, priority, run_at, attempt, max_attempts, lease_ttl,
       lease_token, lease_owner, lease_expires_at, heartbeat_at, lock_key, partition_key,
       idempotency_key, args_hash, cancel_requested, progress, checkpoint, result,
       last_error, created_at, started_at, finished_at, updated_at,
       requires, prefers, attempted_at, trace_parent,
       schedule, scheduled_for, timeout, deadline, rerun, previous_state, previous_result, callback_url,
       CASE WHEN workflow_id IS NOT NULL OR wait_for IS NOT NULL OR parent_id IS NOT NULL THEN json_build_array(
           workflow_id, workflow_ref, run_on, wait_for, dependencies, pending, canceled_by, parent_id, child_key) END,
       coalesce($1::timestamptz, now())
FROM jobd_jobs
WHERE id = $2
FOR UPDATE;
