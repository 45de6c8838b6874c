-- Applies an operator's transition that Go decided (job.Cancel,
-- job.Retry) from the row the write transaction read, fenced by the state
-- and lease token read there. It decides nothing. The lease is left as it
-- is: a job that is not running holds none, and a running job asked to
-- stop keeps its holder's. :run_at NULL keeps run_at; :finished_at NULL
-- clears finished_at.
UPDATE jobd_jobs
SET state = :state,
    run_at = coalesce(:run_at, run_at),
    attempt = :attempt,
    cancel_requested = :cancel_requested,
    finished_at = :finished_at,
    updated_at = :stamp
WHERE id = :id
  AND state = :from
  AND lease_token IS :token
RETURNING *
