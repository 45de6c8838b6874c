-- Applies an operator's transition that Go decided (job.Cancel,
-- job.Retry) from the row the write transaction read, fenced by the state
-- and lease token read there. It decides nothing. The lease is left as it
-- is: a job that is not running holds none, and a running job asked to
-- stop keeps its holder's. :run_at NULL keeps run_at; :finished_at NULL
-- clears finished_at; :attempted_at NULL clears attempted_at; :entries,
-- a JSON array (job.MarshalJournal) or NULL for none, is appended to the
-- journal, in order: the journal is NULL (no entries stored) or a JSON
-- array of objects, never empty, and the entries go after its last
-- element; json() checks the result. A rerun (job.Rerun; :rerun the new
-- counter, NULL for any other transition) sets previous_state to
-- :previous_state and previous_result to the result, which it keeps,
-- readable until the next claim clears it, and, when :args is not NULL,
-- the args and their hash (:args_hash, '' for none).
UPDATE jobd_jobs
SET state = :state,
    run_at = coalesce(:run_at, run_at),
    attempt = :attempt,
    cancel_requested = :cancel_requested,
    finished_at = :finished_at,
    attempted_at = :attempted_at,
    rerun = coalesce(:rerun, rerun),
    previous_state = CASE WHEN :rerun IS NULL THEN previous_state ELSE :previous_state END,
    previous_result = CASE WHEN :rerun IS NULL THEN previous_result ELSE result END,
    args = coalesce(:args, args),
    args_hash = CASE WHEN :args IS NULL THEN args_hash ELSE nullif(:args_hash, '') END,
    journal = CASE
        WHEN :entries IS NULL THEN journal
        WHEN journal IS NULL THEN :entries
        ELSE json(substr(journal, 1, length(journal) - 1) || ',' || substr(:entries, 2))
    END,
    updated_at = :stamp
WHERE id = :id
  AND state = :from
  AND lease_token IS :token
RETURNING id, queue, kind, args, state, priority, run_at, attempt, max_attempts, lease_ttl_us,
          lease_token, lease_owner, lease_expires_at, heartbeat_at, lock_key, partition_key,
          idempotency_key, args_hash, cancel_requested, progress, checkpoint, result,
          last_error, created_at, started_at, finished_at, updated_at,
          requires, prefers, attempted_at, trace_parent,
          schedule, scheduled_for, timeout_us, deadline, rerun, previous_state, previous_result, callback_url,
          CASE WHEN workflow_id IS NOT NULL OR wait_for IS NOT NULL OR parent_id IS NOT NULL THEN json_array(
              workflow_id, workflow_ref, run_on, wait_for, dependencies, pending, canceled_by, parent_id, child_key) END
