-- Up to :limit schedules due at :now (next_run_at <= :now), not paused,
-- earliest first: the partial index jobd_schedules_due_idx.
SELECT name, cron, timezone, template, overlap, catch_up, catch_up_limit, paused, source,
       next_run_at, last_run_at, last_job_id, created_at, updated_at
FROM jobd_schedules
WHERE NOT paused AND next_run_at <= :now
ORDER BY next_run_at
LIMIT :limit
