-- Applies a transition of a workflow task that Go decided (the workflow
-- step: store.DecidePropagate, DecideRetry, DecideCancel; an operator's
-- cancel or retry of a task), fenced by the state its facts were read
-- with (:from); the write transaction holds the file's write lock since
-- it read them. It decides nothing. :run_at NULL keeps run_at;
-- :finished_at NULL clears it; :last_error NULL keeps it; :attempted_at
-- NULL clears it; :entries (a JSON array, job.MarshalJournal; NULL:
-- none) go after the journal's last element; :wait_for, :pending and
-- :canceled_by are written as they are (NULL: none). The lease is left
-- as it is: these transitions never leave running. Returns the task as
-- it now is.
UPDATE jobd_jobs
SET state = :state,
    run_at = coalesce(:run_at, run_at),
    attempt = :attempt,
    cancel_requested = :cancel_requested,
    finished_at = :finished_at,
    last_error = coalesce(:last_error, last_error),
    attempted_at = :attempted_at,
    journal = CASE
        WHEN :entries IS NULL THEN journal
        WHEN journal IS NULL THEN :entries
        ELSE json(substr(journal, 1, length(journal) - 1) || ',' || substr(:entries, 2))
    END,
    wait_for = :wait_for,
    pending = :pending,
    canceled_by = :canceled_by,
    updated_at = :stamp
WHERE id = :id
  AND state = :from
RETURNING id, queue, kind, args, state, priority, run_at, attempt, max_attempts, lease_ttl_us,
          lease_token, lease_owner, lease_expires_at, heartbeat_at, lock_key, partition_key,
          idempotency_key, args_hash, cancel_requested, progress, checkpoint, result,
          last_error, created_at, started_at, finished_at, updated_at,
          requires, prefers, attempted_at, trace_parent,
          schedule, scheduled_for, timeout_us, deadline, rerun, previous_state, previous_result, callback_url,
          CASE WHEN workflow_id IS NOT NULL OR wait_for IS NOT NULL OR parent_id IS NOT NULL THEN json_array(
              workflow_id, workflow_ref, run_on, wait_for, dependencies, pending, canceled_by, parent_id, child_key) END
