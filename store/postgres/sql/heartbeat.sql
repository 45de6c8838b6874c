-- Extends the leases still held. $1 now, $2 job ids, $3 their lease
-- tokens, $4 their owners ('': not fenced by the owner). Returns the
-- leases held. updated_at is left alone: a heartbeat is not a change the
-- "updated since" feed reports, and every running job beats every few
-- seconds. The owner is never rewritten: a heartbeat renews only the
-- leases of their owner. A lease never outlives its attempt's deadline
-- (least() ignores a NULL one), and an attempt past its deadline is over:
-- its lease is not held any more.
-- j.id = ANY (ARRAY[l.id]): a probe of the primary key per job whatever
-- the statistics, never a walk of it (see claim.sql).
UPDATE jobd_jobs j SET
    lease_expires_at = least(coalesce($1::timestamptz, now()) + j.lease_ttl, j.deadline),
    heartbeat_at = coalesce($1::timestamptz, now())
FROM unnest($2::uuid[], $3::uuid[], $4::text[]) AS l(id, token, owner)
WHERE j.id = ANY (ARRAY[l.id])
  AND j.state = 'running'
  AND j.lease_token = l.token
  AND (l.owner = '' OR j.lease_owner = l.owner)
  AND (j.deadline IS NULL OR j.deadline > coalesce($1::timestamptz, now()))
RETURNING j.id, j.lease_token, j.cancel_requested;
