-- Creates a schedule or replaces its definition and next run, keeping its
-- paused flag, last run, last job and created_at. The fence: a schedule of
-- source 'config' is replaced only by a put of that source; otherwise
-- nothing changes and no row comes back.
INSERT INTO jobd_schedules (
    name, cron, timezone, template, overlap, catch_up, catch_up_limit, source, next_run_at,
    created_at, updated_at
) VALUES (
    :name, :cron, :timezone, :template, :overlap, :catch_up, :catch_up_limit, :source, :next_run_at,
    :now, :now
)
ON CONFLICT (name) DO UPDATE SET
    cron = excluded.cron,
    timezone = excluded.timezone,
    template = excluded.template,
    overlap = excluded.overlap,
    catch_up = excluded.catch_up,
    catch_up_limit = excluded.catch_up_limit,
    source = excluded.source,
    next_run_at = excluded.next_run_at,
    updated_at = excluded.updated_at
WHERE jobd_schedules.source = 'api' OR excluded.source = 'config'
RETURNING name, cron, timezone, template, overlap, catch_up, catch_up_limit, paused, source,
       next_run_at, last_run_at, last_job_id, created_at, updated_at
