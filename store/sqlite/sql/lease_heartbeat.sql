-- Extends a lease that is still held: the job running under this token,
-- owned by :owner ('': not fenced by the owner).
-- updated_at is left alone: a heartbeat is not a change the "updated
-- since" feed reports, and every running job beats every few seconds.
UPDATE jobd_jobs
SET lease_expires_at = :now + lease_ttl_us,
    heartbeat_at = :now
WHERE id = :id AND state = 'running' AND lease_token = :token
  AND (:owner = '' OR lease_owner = :owner)
RETURNING cancel_requested
