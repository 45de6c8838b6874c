-- An operator's retry of a failed or canceled job: queued again, due now,
-- with its attempts reset. The checkpoint and the last error stay.
UPDATE jobd_jobs
SET state = 'queued',
    attempt = 0,
    run_at = :now,
    cancel_requested = 0,
    finished_at = NULL,
    lease_token = NULL,
    lease_expires_at = NULL,
    updated_at = :stamp
WHERE id = :id AND state IN ('failed', 'canceled')
RETURNING *
