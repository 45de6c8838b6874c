-- Fences a step record (JobStep) by the lease, as checkpoint.sql does,
-- extends the lease and marks the job durable (its claims read what it
-- resumes from). $1 now, $2 job id, $3 lease token, $4 lease owner ('':
-- not fenced by it). Returns the attempt, whether cancel was requested
-- and how many steps the job recorded.
UPDATE jobd_jobs SET
    durable = true,
    lease_expires_at = least(coalesce($1::timestamptz, now()) + lease_ttl, deadline),
    heartbeat_at = coalesce($1::timestamptz, now()),
    updated_at = coalesce($1::timestamptz, now())
WHERE id = $2
  AND state = 'running'
  AND lease_token = $3
  AND ($4::text = '' OR lease_owner = $4::text)
  AND (deadline IS NULL OR deadline > coalesce($1::timestamptz, now()))
RETURNING attempt, cancel_requested, (SELECT count(*) FROM jobd_job_steps WHERE job_id = $2),
          coalesce($1::timestamptz, now());
