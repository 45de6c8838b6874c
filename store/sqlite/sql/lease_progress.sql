-- Stores progress and extends the lease, fenced by the token.
UPDATE jobd_jobs
SET progress = :progress,
    lease_expires_at = :now + lease_ttl_us,
    heartbeat_at = :now,
    updated_at = :stamp
WHERE id = :id AND state = 'running' AND lease_token = :token
RETURNING cancel_requested
