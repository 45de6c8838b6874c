-- Moves the chosen candidates to running, each under its fresh lease
-- token. :batch is a JSON array of {"id", "token"}. started_at is kept
-- from the first claim. The rows come back in no particular order. The
-- claim writes no journal entry: attempted_at (with lease_owner, the
-- entry's detail, and the attempt) implies its "claimed" entry until a
-- later transition stores it (see job.Journal). An attempt under a
-- timeout (the job's own, else :default_timeout_us, NULL for none) gets
-- its deadline, which its lease never outlives. The claim clears the
-- result: a queued job has none, but for a re-run's, which stays
-- readable until this claim (and which the handler receives as
-- previous_result).
--
-- Planned against any statistics: the jobs come from the IN list (a
-- primary-key search per id), their values from temp.jobd_batch, where
-- batch_load.sql put :batch (a primary-key search per job). Joining
-- json_each(:batch) itself to jobd_jobs, as this statement once did, let
-- the planner put jobd_jobs in the outer loop when ANALYZE had seen the
-- table empty (a drained queue), and then walk the whole queue once per
-- job of the batch.
UPDATE jobd_jobs
SET state = 'running',
    attempt = attempt + 1,
    lease_token = b.v_token,
    lease_owner = :owner,
    lease_expires_at = CASE
        WHEN coalesce(timeout_us, :default_timeout_us) IS NULL THEN :now + lease_ttl_us
        ELSE min(:now + lease_ttl_us, :now + coalesce(timeout_us, :default_timeout_us))
    END,
    deadline = :now + coalesce(timeout_us, :default_timeout_us),
    result = NULL,
    heartbeat_at = :now,
    started_at = coalesce(started_at, :now),
    attempted_at = :now,
    updated_at = :stamp
FROM temp.jobd_batch AS b
WHERE jobd_jobs.id IN (SELECT value ->> 'id' FROM json_each(:batch))
  AND jobd_jobs.id = b.v_id
  AND jobd_jobs.state = 'queued'
RETURNING id, queue, kind, args, state, priority, run_at, attempt, max_attempts, lease_ttl_us,
          lease_token, lease_owner, lease_expires_at, heartbeat_at, lock_key, partition_key,
          idempotency_key, args_hash, cancel_requested, progress, checkpoint, result,
          last_error, created_at, started_at, finished_at, updated_at,
          requires, prefers, attempted_at, trace_parent,
          schedule, scheduled_for, timeout_us, deadline, rerun, previous_state, previous_result, callback_url,
          CASE WHEN workflow_id IS NOT NULL OR wait_for IS NOT NULL OR parent_id IS NOT NULL THEN json_array(
              workflow_id, workflow_ref, run_on, wait_for, dependencies, pending, canceled_by, parent_id, child_key) END,
          -- A durable job's claim reads what it resumes from (readResume);
          -- any other job's reads nothing more.
          durable, signal_wait
