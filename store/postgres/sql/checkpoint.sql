-- Stores the checkpoint (kept across retries) and extends the lease,
-- fenced by the token and the owner. $1 now, $2 job id, $3 lease token,
-- $4 checkpoint, $5 lease owner ('': not fenced by the owner). An
-- attempt past its deadline holds no lease, and the lease never outlives
-- the deadline. Returns whether cancel was requested.
UPDATE jobd_jobs SET
    checkpoint = $4::jsonb,
    lease_expires_at = least(coalesce($1::timestamptz, now()) + lease_ttl, deadline),
    heartbeat_at = coalesce($1::timestamptz, now()),
    updated_at = coalesce($1::timestamptz, now())
WHERE id = $2
  AND state = 'running'
  AND lease_token = $3
  AND ($5::text = '' OR lease_owner = $5::text)
  AND (deadline IS NULL OR deadline > coalesce($1::timestamptz, now()))
RETURNING cancel_requested;
