-- Fences a step record (JobStep) by the lease, as lease_checkpoint.sql
-- does, extends the lease and marks the job durable (its claims read
-- what it resumes from). Returns the attempt, whether cancel was
-- requested and how many steps the job recorded.
UPDATE jobd_jobs
SET durable = 1,
    lease_expires_at = min(:now + lease_ttl_us, coalesce(deadline, :now + lease_ttl_us)),
    heartbeat_at = :now,
    updated_at = :stamp
WHERE id = :id AND state = 'running' AND lease_token = :token
  AND (:owner = '' OR lease_owner = :owner)
  AND (deadline IS NULL OR deadline > :now)
RETURNING attempt, cancel_requested, (SELECT count(*) FROM jobd_job_steps WHERE job_id = :id)
