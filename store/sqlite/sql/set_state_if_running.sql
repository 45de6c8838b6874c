-- Applies transitions out of running that Go decided (job.Finish,
-- job.Rescue, job.TimeOut), each fenced by the state and lease token its facts were
-- read with. It decides nothing: :batch is a JSON array of {"id",
-- "token", "state", "run_at" (absent: kept), "attempt", "finished_at"
-- (absent: cleared), "result" (the result's JSON text; absent: kept),
-- "last_error" (absent: kept), "attempted_at" (absent: cleared),
-- "entries" (the entries to append to the journal, in order, a JSON
-- array as job.MarshalJournal writes it; absent: none), "outcome" (the
-- holder's outcome that decided it, which the row remembers with the lease
-- token and owner; absent for a rescue or a time-out, which leaves what
-- the row remembers as it is)}.
--
-- The journal is NULL (no entries stored) or a JSON array of objects,
-- never empty: the entries, in the same form, go after its last element;
-- json() checks the result.
--
-- Returns the ids it changed; callback is true for a job made final that
-- has a callback URL, whose callback the driver records in the outbox
-- (webhook_events_record.sql) in this same transaction.
--
-- Planned against any statistics: the jobs come from the IN list (a
-- primary-key search per id), their values from temp.jobd_batch, where
-- batch_load.sql put :batch (a primary-key search per job). Joining
-- json_each(:batch) itself to jobd_jobs, as this statement once did, let
-- the planner put jobd_jobs in the outer loop when ANALYZE had seen the
-- table empty (a drained queue), and then walk the whole queue once per
-- job of the batch.
UPDATE jobd_jobs
SET state = d.v_state,
    run_at = coalesce(d.v_run_at, run_at),
    attempt = d.v_attempt,
    finished_at = d.v_finished_at,
    result = coalesce(d.v_result, result),
    last_error = coalesce(d.v_last_error, last_error),
    lease_token = NULL,
    lease_expires_at = NULL,
    deadline = NULL,
    attempted_at = d.v_attempted_at,
    outcome_token = CASE WHEN d.v_outcome IS NULL THEN outcome_token ELSE d.v_token END,
    outcome = coalesce(d.v_outcome, outcome),
    outcome_owner = CASE WHEN d.v_outcome IS NULL THEN outcome_owner ELSE lease_owner END,
    journal = CASE
        WHEN d.v_entries IS NULL THEN journal
        WHEN journal IS NULL THEN d.v_entries
        ELSE json(substr(journal, 1, length(journal) - 1) || ',' || substr(d.v_entries, 2))
    END,
    updated_at = :stamp
FROM temp.jobd_batch AS d
WHERE jobd_jobs.id IN (SELECT value ->> 'id' FROM json_each(:batch))
  AND jobd_jobs.id = d.v_id
  AND jobd_jobs.state = 'running'
  AND jobd_jobs.lease_token = d.v_token
RETURNING id, callback_url IS NOT NULL AND finished_at IS NOT NULL AS callback
