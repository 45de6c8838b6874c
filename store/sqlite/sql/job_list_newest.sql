-- One page of jobs, newest first. An empty filter matches everything;
-- :states is a JSON array of states, or '' for all. Without a cursor,
-- :after is '~', which sorts after every lowercase uuid, so that the
-- cursor is always a plain range on the primary key; :low, the lowest id
-- the page may return (job_scan_bound.sql), is '' (below every id)
-- without a bound. :queues_limited (0 or 1), :queue_names and
-- :queue_prefixes (JSON arrays) are store.ListParams.QueuesIn.
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
  AND id < :after
  AND id >= :low
ORDER BY id DESC
LIMIT :limit
