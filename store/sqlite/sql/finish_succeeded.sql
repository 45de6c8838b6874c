-- The lease holder's success. Every finish is fenced by state and token:
-- a holder that lost its lease matches no row and changes nothing.
UPDATE jobd_jobs
SET state = 'succeeded',
    result = :result,
    finished_at = :now,
    lease_token = NULL,
    lease_expires_at = NULL,
    updated_at = :stamp
WHERE id = :id AND state = 'running' AND lease_token = :token
RETURNING queue, state, run_at, attempt
