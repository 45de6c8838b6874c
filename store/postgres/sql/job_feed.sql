-- A page of the "updated since" feed, oldest change first. $1 queue,
-- $2 kind, $3 states, $4 lock_key, $5 partition_key (NULL: any);
-- $6 updated_since; ($7, $8) the (updated_at, id) after which the page
-- starts, which the driver sets to (updated_since, the nil uuid) for the
-- first page; $9 page size; $10 the horizon (NULL: none), below which
-- every change has committed (feed_horizon.sql); $11
-- idempotency_key (NULL: any).
-- $12, $13: the queue names (NULL: any queue) and prefixes a caller is
-- limited to (store.ListParams.QueuesIn).
SELECT id, queue, kind, args, state, priority, run_at, attempt, max_attempts, lease_ttl,
       lease_token, lease_owner, lease_expires_at, heartbeat_at, lock_key, partition_key,
       idempotency_key, args_hash, cancel_requested, progress, checkpoint, result,
       last_error, created_at, started_at, finished_at, updated_at,
       requires, prefers, attempted_at, trace_parent,
       schedule, scheduled_for, timeout, deadline, rerun, previous_state, previous_result, callback_url,
       CASE WHEN workflow_id IS NOT NULL OR wait_for IS NOT NULL OR parent_id IS NOT NULL THEN json_build_array(
           workflow_id, workflow_ref, run_on, wait_for, dependencies, pending, canceled_by, parent_id, child_key) END
FROM jobd_jobs
WHERE updated_at >= $6::timestamptz
  AND updated_at >= $7::timestamptz -- where the index scan starts
  AND (updated_at, id) > ($7::timestamptz, $8::uuid)
  AND ($10::timestamptz IS NULL OR updated_at < $10::timestamptz)
  AND ($1::text IS NULL OR queue = $1)
  AND ($2::text IS NULL OR kind = $2)
  AND ($3::text[] IS NULL OR state = ANY ($3))
  AND ($4::text IS NULL OR lock_key = $4)
  AND ($5::text IS NULL OR partition_key = $5)
  AND ($11::text IS NULL OR idempotency_key = $11)
  AND ($12::text[] IS NULL OR queue = ANY ($12)
       OR EXISTS (SELECT FROM unnest($13::text[]) AS p (prefix) WHERE starts_with(queue, p.prefix)))
ORDER BY updated_at, id
LIMIT $9;
