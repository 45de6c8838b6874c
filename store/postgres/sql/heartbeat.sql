-- Extends the leases still held. $1 now, $2 job ids, $3 their lease tokens,
-- $4 owner ('' keeps the recorded one). Returns the leases held.
-- updated_at is left alone: a heartbeat is not a change the "updated
-- since" feed reports, and every running job beats every few seconds.
UPDATE jobd_jobs j SET
    lease_expires_at = coalesce($1::timestamptz, now()) + j.lease_ttl,
    heartbeat_at = coalesce($1::timestamptz, now()),
    lease_owner = coalesce(nullif($4::text, ''), j.lease_owner)
FROM unnest($2::uuid[], $3::uuid[]) AS l(id, token)
WHERE j.id = l.id
  AND j.state = 'running'
  AND j.lease_token = l.token
RETURNING j.id, j.lease_token, j.cancel_requested;
