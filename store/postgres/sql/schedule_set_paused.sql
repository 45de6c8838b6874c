-- Pauses or resumes a schedule. $1 now (NULL: the database's now()), $2
-- name, $3 paused, $4 the next run a resume sets (NULL: kept).
UPDATE jobd_schedules SET
    paused = $3,
    next_run_at = coalesce($4::timestamptz, next_run_at),
    updated_at = coalesce($1::timestamptz, now())
WHERE name = $2
RETURNING name, cron, timezone, template, overlap, catch_up, catch_up_limit, paused, source,
          next_run_at, last_run_at, last_job_id, created_at, updated_at;
