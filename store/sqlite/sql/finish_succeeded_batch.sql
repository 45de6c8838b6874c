-- The hot path of JobFinish: a batch of successes, each job once, in one
-- statement that reads nothing first: a success's transition needs
-- nothing of the row, and keeps its attempt, attempted_at and journal
-- (job.SucceededState): the row implies its journal entry (state
-- succeeded, finished_at). :state is the state job.Finish decides for a
-- success; :batch is a JSON array of {"id", "token", "owner", "result"},
-- result being the result's JSON text or absent, and owner the lease
-- owner ('': not fenced by it). Fenced like every finish: a job whose row
-- does not come back had lost its lease.
UPDATE jobd_jobs
SET state = :state,
    result = b.value ->> 'result',
    finished_at = :now,
    lease_token = NULL,
    lease_expires_at = NULL,
    updated_at = :stamp
FROM json_each(:batch) AS b
WHERE jobd_jobs.id = b.value ->> 'id'
  AND jobd_jobs.state = 'running'
  AND jobd_jobs.lease_token = b.value ->> 'token'
  AND (coalesce(b.value ->> 'owner', '') = '' OR jobd_jobs.lease_owner = b.value ->> 'owner')
RETURNING id
