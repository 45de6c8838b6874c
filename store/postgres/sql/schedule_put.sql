-- Creates a schedule or replaces its definition and next run, keeping its
-- paused flag, last run, last job and created_at. $1 now (NULL: the
-- database's now()), $2 name, $3 cron, $4 timezone, $5 template, $6
-- overlap, $7 catch_up, $8 catch_up_limit, $9 source, $10 next_run_at.
--
-- The fence: a schedule of source 'config' is replaced only by a put of
-- that source; otherwise nothing changes and no row comes back.
INSERT INTO jobd_schedules AS s (
    name, cron, timezone, template, overlap, catch_up, catch_up_limit, source, next_run_at,
    created_at, updated_at
) VALUES (
    $2, $3, $4, $5, $6, $7, $8, $9, $10,
    coalesce($1::timestamptz, now()), coalesce($1::timestamptz, now())
)
ON CONFLICT (name) DO UPDATE SET
    cron = EXCLUDED.cron,
    timezone = EXCLUDED.timezone,
    template = EXCLUDED.template,
    overlap = EXCLUDED.overlap,
    catch_up = EXCLUDED.catch_up,
    catch_up_limit = EXCLUDED.catch_up_limit,
    source = EXCLUDED.source,
    next_run_at = EXCLUDED.next_run_at,
    updated_at = EXCLUDED.updated_at
WHERE s.source = 'api' OR EXCLUDED.source = 'config'
RETURNING name, cron, timezone, template, overlap, catch_up, catch_up_limit, paused, source,
          next_run_at, last_run_at, last_job_id, created_at, updated_at;
