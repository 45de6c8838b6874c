-- Stores the checkpoint (kept across retries) and extends the lease,
-- fenced by the token. $1 now, $2 job id, $3 lease token, $4 checkpoint.
UPDATE jobd_jobs SET
    checkpoint = $4::jsonb,
    lease_expires_at = coalesce($1::timestamptz, now()) + lease_ttl,
    heartbeat_at = coalesce($1::timestamptz, now()),
    updated_at = coalesce($1::timestamptz, now())
WHERE id = $2
  AND state = 'running'
  AND lease_token = $3
RETURNING id;
