-- The lease holder's failure. It goes back to the queue, due after the
-- retry delay, when it may be retried and has attempts left; otherwise it
-- fails for good. A job whose cancel was requested ends canceled either
-- way: the cancel request wins, and the job never runs again (DESIGN.md
-- section 2). The next state is computed once, in n, and the SET reads it.
UPDATE jobd_jobs AS j
SET state = n.next,
    run_at = CASE n.next WHEN 'queued' THEN :retry_at ELSE j.run_at END,
    finished_at = CASE n.next WHEN 'queued' THEN NULL ELSE :now END,
    last_error = :error,
    lease_token = NULL,
    lease_expires_at = NULL,
    updated_at = :stamp
FROM (
    SELECT id, CASE
        WHEN cancel_requested THEN 'canceled'
        WHEN NOT :retryable OR attempt >= max_attempts THEN 'failed'
        ELSE 'queued'
    END AS next
    FROM jobd_jobs
    WHERE id = :id
) AS n
WHERE j.id = n.id AND j.state = 'running' AND j.lease_token = :token
RETURNING queue, state, run_at, attempt
