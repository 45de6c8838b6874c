-- Records a pass of the ticker or a trigger, fenced by the next_run_at
-- the caller read (:from; NULL: no fence): :next (NULL: kept) becomes
-- next_run_at, and :last_job (NULL: kept) last_job_id, with :last_run_at.
UPDATE jobd_schedules SET
    next_run_at = coalesce(:next, next_run_at),
    last_job_id = coalesce(:last_job, last_job_id),
    last_run_at = CASE WHEN :last_job IS NULL THEN last_run_at ELSE :last_run_at END,
    updated_at = :now
WHERE name = :name
  AND (:from IS NULL OR next_run_at = :from)
