-- Applies transitions out of running that Go decided (job.Finish,
-- job.Rescue), each fenced by the state and lease token its facts were
-- read with. It decides nothing: :batch is a JSON array of {"id",
-- "token", "state", "run_at" (absent: kept), "attempt", "finished_at"
-- (absent: cleared), "result" (the result's JSON text; absent: kept),
-- "last_error" (absent: kept), "attempted_at" (absent: cleared),
-- "entries" (the entries to append to the journal, in order, a JSON
-- array as job.MarshalJournal writes it; absent: none)}.
--
-- The journal is NULL (no entries stored) or a JSON array of objects,
-- never empty: the entries, in the same form, go after its last element;
-- json() checks the result.
--
-- Returns the ids it changed; callback is true for a job made final that
-- has a callback URL, whose callback the driver records in the outbox
-- (webhook_events_record.sql) in this same transaction.
UPDATE jobd_jobs
SET state = d.value ->> 'state',
    run_at = coalesce(d.value ->> 'run_at', run_at),
    attempt = d.value ->> 'attempt',
    finished_at = d.value ->> 'finished_at',
    result = coalesce(d.value ->> 'result', result),
    last_error = coalesce(d.value ->> 'last_error', last_error),
    lease_token = NULL,
    lease_expires_at = NULL,
    attempted_at = d.value ->> 'attempted_at',
    journal = CASE
        WHEN d.value -> 'entries' IS NULL THEN journal
        WHEN journal IS NULL THEN d.value -> 'entries'
        ELSE json(substr(journal, 1, length(journal) - 1) || ',' || substr(d.value -> 'entries', 2))
    END,
    updated_at = :stamp
FROM json_each(:batch) AS d
WHERE jobd_jobs.id = d.value ->> 'id'
  AND jobd_jobs.state = 'running'
  AND jobd_jobs.lease_token = d.value ->> 'token'
RETURNING id, callback_url IS NOT NULL AND finished_at IS NOT NULL AS callback
