-- Stores the checkpoint (kept across retries) and extends the lease,
-- fenced by the token and the owner (:owner '': not fenced by it).
UPDATE jobd_jobs
SET checkpoint = :checkpoint,
    lease_expires_at = :now + lease_ttl_us,
    heartbeat_at = :now,
    updated_at = :stamp
WHERE id = :id AND state = 'running' AND lease_token = :token
  AND (:owner = '' OR lease_owner = :owner)
