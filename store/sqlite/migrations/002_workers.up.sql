-- 002: remote workers, their API keys, and jobs' capability rules.
-- (The PostgreSQL migration of the same number says why each is so.)
-- Capability lists are JSON arrays of strings, sorted; NULL when empty.

CREATE TABLE jobd_workers (
    id                TEXT    NOT NULL PRIMARY KEY,
    name              TEXT    NOT NULL,
    capabilities      TEXT    NOT NULL DEFAULT '[]',
    metadata          TEXT    NOT NULL DEFAULT '{}',
    status            TEXT    NOT NULL DEFAULT 'idle'
        CHECK (status IN ('active', 'idle', 'busy', 'offline')),
    disabled          INTEGER NOT NULL DEFAULT 0,
    last_heartbeat_at INTEGER,
    jobs_done         INTEGER NOT NULL DEFAULT 0,
    jobs_failed       INTEGER NOT NULL DEFAULT 0,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL
) STRICT;

ALTER TABLE jobd_api_keys ADD COLUMN worker_id TEXT;
CREATE INDEX jobd_api_keys_worker_idx ON jobd_api_keys (worker_id)
    WHERE worker_id IS NOT NULL;

ALTER TABLE jobd_jobs ADD COLUMN requires TEXT;
ALTER TABLE jobd_jobs ADD COLUMN prefers TEXT;
