-- A page of jobs, oldest first. $1 queue, $2 kind, $3 states, $4 lock_key,
-- $5 partition_key (NULL: any); $6 the last id of the previous page (NULL:
-- the first page); $7 page size; $8 idempotency_key (NULL: any). As in job_list.sql, the cursor is always
-- an index condition on the primary key: a missing one is the nil uuid.
-- $9, $10: the queue names (NULL: any queue) and prefixes a caller is
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
WHERE id > coalesce($6::uuid, '00000000-0000-0000-0000-000000000000')
  AND ($1::text IS NULL OR queue = $1)
  AND ($2::text IS NULL OR kind = $2)
  AND ($3::text[] IS NULL OR state = ANY ($3))
  AND ($4::text IS NULL OR lock_key = $4)
  AND ($5::text IS NULL OR partition_key = $5)
  AND ($8::text IS NULL OR idempotency_key = $8)
  AND ($9::text[] IS NULL OR queue = ANY ($9)
       OR EXISTS (SELECT FROM unnest($10::text[]) AS p (prefix) WHERE starts_with(queue, p.prefix)))
ORDER BY id
LIMIT $7;
