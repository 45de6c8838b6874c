-- Moves the chosen candidates to running, each under its fresh lease
-- token. :batch is a JSON array of {"id", "token"}. started_at is kept
-- from the first claim. The rows come back in no particular order.
UPDATE jobd_jobs
SET state = 'running',
    attempt = attempt + 1,
    lease_token = b.value ->> 'token',
    lease_owner = :owner,
    lease_expires_at = :now + lease_ttl_us,
    heartbeat_at = :now,
    started_at = coalesce(started_at, :now),
    updated_at = :stamp
FROM json_each(:batch) AS b
WHERE jobd_jobs.id = b.value ->> 'id' AND jobd_jobs.state = 'queued'
RETURNING *
