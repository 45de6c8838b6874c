-- 006: periodic jobs, re-runs and hard time limits. (The PostgreSQL
-- migration 007_schedules says what each column holds.) timeout_us is
-- INTEGER microseconds; deadline and scheduled_for unix microseconds.
ALTER TABLE jobd_jobs ADD COLUMN schedule TEXT;
ALTER TABLE jobd_jobs ADD COLUMN scheduled_for INTEGER;
ALTER TABLE jobd_jobs ADD COLUMN timeout_us INTEGER;
ALTER TABLE jobd_jobs ADD COLUMN deadline INTEGER;
ALTER TABLE jobd_jobs ADD COLUMN rerun INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobd_jobs ADD COLUMN previous_state TEXT;
ALTER TABLE jobd_jobs ADD COLUMN previous_result TEXT;

CREATE TABLE jobd_schedules (
    name           TEXT    NOT NULL PRIMARY KEY,
    cron           TEXT    NOT NULL,
    timezone       TEXT    NOT NULL,
    template       TEXT    NOT NULL,
    overlap        TEXT    NOT NULL CHECK (overlap IN ('allow', 'skip')),
    catch_up       TEXT    NOT NULL CHECK (catch_up IN ('none', 'one', 'all')),
    catch_up_limit INTEGER NOT NULL CHECK (catch_up_limit >= 1),
    paused         INTEGER NOT NULL DEFAULT 0,
    source         TEXT    NOT NULL CHECK (source IN ('api', 'config')),
    next_run_at    INTEGER NOT NULL,
    last_run_at    INTEGER,
    last_job_id    TEXT,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
) STRICT;

CREATE INDEX jobd_schedules_due_idx ON jobd_schedules (next_run_at) WHERE NOT paused;
