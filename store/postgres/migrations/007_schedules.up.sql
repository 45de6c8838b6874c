-- 007: periodic jobs, re-runs and hard time limits.
--
-- The job's new columns, all nullable without a default but rerun (a
-- constant default, which PostgreSQL keeps in the catalog): adding them
-- rewrites nothing, and none is indexed, so updates that set them stay
-- HOT.
--   schedule, scheduled_for: the schedule and the tick that made the job.
--   timeout: the bound of each attempt's run time; deadline: the current
--     attempt's (its claim + the timeout, or the queue's default), set by
--     the claim and cleared by every transition out of running. The lease
--     never outlives it (lease_expires_at <= deadline), so the reaper
--     finds a timed-out attempt by the lease index.
--   rerun: the operator's re-runs; previous_state and previous_result:
--     the state and result the job had when it was last re-run (the
--     result stays in result too until the claim clears it).
ALTER TABLE jobd_jobs ADD COLUMN schedule text;
ALTER TABLE jobd_jobs ADD COLUMN scheduled_for timestamptz;
ALTER TABLE jobd_jobs ADD COLUMN timeout interval;
ALTER TABLE jobd_jobs ADD COLUMN deadline timestamptz;
ALTER TABLE jobd_jobs ADD COLUMN rerun integer NOT NULL DEFAULT 0;
ALTER TABLE jobd_jobs ADD COLUMN previous_state text;
ALTER TABLE jobd_jobs ADD COLUMN previous_result jsonb;

-- Schedules: a job template run on a cron spec. The ticker (a
-- maintenance duty of the leader) finds the due ones by next_run_at and
-- advances each in one transaction fenced by the next_run_at it read.
-- template is the job template as JSON (package schedule's Template);
-- source is 'config' for a schedule of a node's --schedules, which the
-- API may not change, else 'api'.
CREATE TABLE jobd_schedules (
    name           text PRIMARY KEY,
    cron           text NOT NULL,
    timezone       text NOT NULL,
    template       jsonb NOT NULL,
    overlap        text NOT NULL CHECK (overlap IN ('allow', 'skip')),
    catch_up       text NOT NULL CHECK (catch_up IN ('none', 'one', 'all')),
    catch_up_limit integer NOT NULL CHECK (catch_up_limit >= 1),
    paused         boolean NOT NULL DEFAULT false,
    source         text NOT NULL CHECK (source IN ('api', 'config')),
    next_run_at    timestamptz NOT NULL,
    last_run_at    timestamptz,
    last_job_id    uuid,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL
);

-- The ticker's search: the schedules due, paused ones left out.
CREATE INDEX jobd_schedules_due ON jobd_schedules (next_run_at) WHERE NOT paused;
