-- Pauses or resumes a schedule; :next (NULL: kept) is a resume's next run.
UPDATE jobd_schedules SET
    paused = :paused,
    next_run_at = coalesce(:next, next_run_at),
    updated_at = :now
WHERE name = :name
RETURNING name, cron, timezone, template, overlap, catch_up, catch_up_limit, paused, source,
       next_run_at, last_run_at, last_job_id, created_at, updated_at
