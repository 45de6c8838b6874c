-- 007: webhooks. (The PostgreSQL migration 008 says why each is so.)
-- Event lists are JSON arrays of strings.

ALTER TABLE jobd_jobs ADD COLUMN callback_url TEXT;

CREATE TABLE jobd_webhooks (
    id         TEXT    NOT NULL PRIMARY KEY,
    url        TEXT    NOT NULL,
    events     TEXT    NOT NULL,
    secret     TEXT    NOT NULL,
    queue      TEXT,
    kind       TEXT,
    config     INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;

CREATE TABLE jobd_webhook_events (
    id           INTEGER NOT NULL PRIMARY KEY,
    type         TEXT    NOT NULL,
    at           INTEGER NOT NULL,
    job_id       TEXT,
    queue        TEXT,
    kind         TEXT,
    attempt      INTEGER,
    max_attempts INTEGER,
    error        TEXT,
    finished_at  INTEGER,
    url          TEXT,
    worker_id    TEXT,
    worker_name  TEXT
) STRICT;

CREATE TABLE jobd_webhook_limits (
    webhook_id   TEXT    NOT NULL,
    event        TEXT    NOT NULL,
    key          TEXT    NOT NULL,
    sent_at      INTEGER,
    suppressed   INTEGER NOT NULL DEFAULT 0,
    window_start INTEGER,
    window_count INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (webhook_id, event, key)
) STRICT;

CREATE INDEX jobd_webhook_limits_due_idx ON jobd_webhook_limits (sent_at)
    WHERE suppressed > 0;

CREATE TABLE jobd_settings (
    name       TEXT    NOT NULL PRIMARY KEY,
    value      TEXT    NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;
