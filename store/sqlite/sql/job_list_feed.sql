-- One page of the "updated since" feed, ascending by (updated_at, id).
-- Without a cursor the caller passes (:since, ''), which makes the row
-- value comparison mean updated_at >= :since. Both bounds are ranges on
-- jobd_jobs_updated_idx.
SELECT id, queue, kind, args, state, priority, run_at, attempt, max_attempts, lease_ttl_us,
       lease_token, lease_owner, lease_expires_at, heartbeat_at, lock_key, partition_key,
       idempotency_key, args_hash, cancel_requested, progress, checkpoint, result,
       last_error, created_at, started_at, finished_at, updated_at,
       requires, prefers, attempted_at, trace_parent,
       schedule, scheduled_for, timeout_us, deadline, rerun, previous_state, previous_result, callback_url,
       CASE WHEN workflow_id IS NOT NULL OR wait_for IS NOT NULL OR parent_id IS NOT NULL THEN json_array(
           workflow_id, workflow_ref, run_on, wait_for, dependencies, pending, canceled_by, parent_id, child_key) END
FROM jobd_jobs
WHERE (:queue = '' OR queue = :queue)
  AND (:kind = '' OR kind = :kind)
  AND (:states = '' OR state IN (SELECT value FROM json_each(:states)))
  AND (:lock_key = '' OR lock_key = :lock_key)
  AND (:partition_key = '' OR partition_key = :partition_key)
  AND (:idempotency_key = '' OR idempotency_key = :idempotency_key)
  AND (:queues_limited = 0 OR queue IN (SELECT value FROM json_each(:queue_names))
       OR EXISTS (SELECT 1 FROM json_each(:queue_prefixes) AS p
                  WHERE substr(queue, 1, length(p.value)) = p.value))
  AND updated_at >= :since
  AND (updated_at, id) > (:after_at, :after_id)
ORDER BY updated_at, id
LIMIT :limit
