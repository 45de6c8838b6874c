-- Returns running jobs whose lease expired (lease_expires_at <= now: the
-- expiry is the first instant the lease no longer covers), longest
-- expired first, to the queue (due now; their attempt was counted at the
-- claim), or fails them when they used all their attempts. A job whose
-- cancel was requested ends canceled. The lease index finds them.
UPDATE jobd_jobs AS j
SET state = n.next,
    run_at = CASE n.next WHEN 'queued' THEN :now ELSE j.run_at END,
    finished_at = CASE n.next WHEN 'queued' THEN NULL ELSE :now END,
    last_error = CASE n.next WHEN 'failed' THEN 'lease expired' ELSE j.last_error END,
    lease_token = NULL,
    lease_expires_at = NULL,
    updated_at = :stamp
FROM (
    SELECT id, CASE
        WHEN cancel_requested THEN 'canceled'
        WHEN attempt >= max_attempts THEN 'failed'
        ELSE 'queued'
    END AS next
    FROM jobd_jobs
    WHERE state = 'running' AND lease_expires_at <= :now
    ORDER BY lease_expires_at
    LIMIT :limit
) AS n
WHERE j.id = n.id
RETURNING id, queue, state, attempt
