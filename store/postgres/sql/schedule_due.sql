-- Up to $2 schedules due at $1 (next_run_at <= $1), not paused, earliest
-- first: the partial index jobd_schedules_due.
SELECT name, cron, timezone, template, overlap, catch_up, catch_up_limit, paused, source,
       next_run_at, last_run_at, last_job_id, created_at, updated_at
FROM jobd_schedules
WHERE NOT paused AND next_run_at <= $1
ORDER BY next_run_at
LIMIT $2;
