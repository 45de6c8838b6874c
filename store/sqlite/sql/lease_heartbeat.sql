-- Extends a lease that is still held: the job running under this token,
-- owned by :owner ('': not fenced by the owner), its attempt's deadline
-- not passed (an attempt past it holds no lease). The lease never
-- outlives the deadline.
-- updated_at is left alone: a heartbeat is not a change the "updated
-- since" feed reports, and every running job beats every few seconds.
UPDATE jobd_jobs
SET lease_expires_at = min(:now + lease_ttl_us, coalesce(deadline, :now + lease_ttl_us)),
    heartbeat_at = :now
WHERE id = :id AND state = 'running' AND lease_token = :token
  AND (:owner = '' OR lease_owner = :owner)
  AND (deadline IS NULL OR deadline > :now)
RETURNING cancel_requested
