-- The lease holder gives the job back unworked (graceful shutdown): queued
-- again, due now, and the attempt it was given does not count. A job whose
-- cancel was requested ends canceled instead.
UPDATE jobd_jobs AS j
SET state = n.next,
    attempt = CASE n.next WHEN 'queued' THEN j.attempt - 1 ELSE j.attempt END,
    run_at = CASE n.next WHEN 'queued' THEN :now ELSE j.run_at END,
    finished_at = CASE n.next WHEN 'queued' THEN NULL ELSE :now END,
    lease_token = NULL,
    lease_expires_at = NULL,
    updated_at = :stamp
FROM (
    SELECT id, CASE WHEN cancel_requested THEN 'canceled' ELSE 'queued' END AS next
    FROM jobd_jobs
    WHERE id = :id
) AS n
WHERE j.id = n.id AND j.state = 'running' AND j.lease_token = :token
RETURNING queue, state, run_at, attempt
