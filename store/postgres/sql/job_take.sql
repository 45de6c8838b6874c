-- Takes a finished job: deletes it and its journal and returns it as it
-- was. $1 job id. A workflow's task is never taken: it goes with its
-- workflow (see workflow_prune.sql); the driver tells it by its
-- workflow_id. Returns the job with taken = true when it was final and
-- is now deleted, or unchanged with taken = false when it is queued or
-- running (nothing deleted). No row when there is no such job.
WITH taken AS (
    DELETE FROM jobd_jobs
    WHERE id = $1 AND state IN ('succeeded', 'failed', 'canceled') AND workflow_id IS NULL
    RETURNING *
)
SELECT true AS taken,
       id, queue, kind, args, state, priority, run_at, attempt, max_attempts, lease_ttl,
       lease_token, lease_owner, lease_expires_at, heartbeat_at, lock_key, partition_key,
       idempotency_key, args_hash, cancel_requested, progress, checkpoint, result,
       last_error, created_at, started_at, finished_at, updated_at,
       requires, prefers, attempted_at, trace_parent,
       schedule, scheduled_for, timeout, deadline, rerun, previous_state, previous_result, callback_url,
       CASE WHEN workflow_id IS NOT NULL OR wait_for IS NOT NULL OR parent_id IS NOT NULL THEN json_build_array(
           workflow_id, workflow_ref, run_on, wait_for, dependencies, pending, canceled_by, parent_id, child_key) END
FROM taken
UNION ALL
-- The statement's snapshot still shows the row as it was; it is read only
-- when the delete matched nothing. A final row here is stale: a concurrent
-- take deleted it, or an operator's retry queued it, after the snapshot
-- was taken (the delete waited for that transaction and then saw its
-- outcome). The driver runs the statement again to learn which.
SELECT false,
       id, queue, kind, args, state, priority, run_at, attempt, max_attempts, lease_ttl,
       lease_token, lease_owner, lease_expires_at, heartbeat_at, lock_key, partition_key,
       idempotency_key, args_hash, cancel_requested, progress, checkpoint, result,
       last_error, created_at, started_at, finished_at, updated_at,
       requires, prefers, attempted_at, trace_parent,
       schedule, scheduled_for, timeout, deadline, rerun, previous_state, previous_result, callback_url,
       CASE WHEN workflow_id IS NOT NULL OR wait_for IS NOT NULL OR parent_id IS NOT NULL THEN json_build_array(
           workflow_id, workflow_ref, run_on, wait_for, dependencies, pending, canceled_by, parent_id, child_key) END
FROM jobd_jobs
WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM taken);
