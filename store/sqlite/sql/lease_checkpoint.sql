-- Stores the checkpoint (kept across retries) and extends the lease,
-- fenced by the token and the owner (:owner '': not fenced by it) and
-- the attempt's deadline (an attempt past it holds no lease, and the
-- lease never outlives it). Returns whether cancel was requested.
UPDATE jobd_jobs
SET checkpoint = :checkpoint,
    lease_expires_at = min(:now + lease_ttl_us, coalesce(deadline, :now + lease_ttl_us)),
    heartbeat_at = :now,
    updated_at = :stamp
WHERE id = :id AND state = 'running' AND lease_token = :token
  AND (:owner = '' OR lease_owner = :owner)
  AND (deadline IS NULL OR deadline > :now)
RETURNING cancel_requested
