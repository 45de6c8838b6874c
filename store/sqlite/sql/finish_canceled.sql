-- The lease holder honoured a cancel request.
UPDATE jobd_jobs
SET state = 'canceled',
    finished_at = :now,
    lease_token = NULL,
    lease_expires_at = NULL,
    updated_at = :stamp
WHERE id = :id AND state = 'running' AND lease_token = :token
RETURNING queue, state, run_at, attempt
