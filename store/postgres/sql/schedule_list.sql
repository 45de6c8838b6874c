-- Every schedule, by name.
SELECT name, cron, timezone, template, overlap, catch_up, catch_up_limit, paused, source,
       next_run_at, last_run_at, last_job_id, created_at, updated_at
FROM jobd_schedules
ORDER BY name;
