-- 001: jobs, their journal, queue settings, leader terms and API keys.
--
-- Conventions (the PostgreSQL schema's, in SQLite's types):
--   * times are INTEGER unix microseconds, UTC;
--   * ids and lease tokens are TEXT in canonical uuid form. UUIDv7 text sorts
--     like its bytes, so ORDER BY id is creation order;
--   * JSON is TEXT; durations are INTEGER microseconds named *_us;
--   * empty lock_key, partition_key and idempotency_key are stored as NULL,
--     so the partial unique indexes below ignore them.
-- STRICT tables make SQLite reject a value of the wrong type instead of
-- storing it silently.

CREATE TABLE jobd_jobs (
    id               TEXT    NOT NULL PRIMARY KEY,
    queue            TEXT    NOT NULL,
    kind             TEXT    NOT NULL,
    args             TEXT    NOT NULL,
    state            TEXT    NOT NULL
        CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'canceled')),
    priority         INTEGER NOT NULL CHECK (priority >= 0),
    run_at           INTEGER NOT NULL,
    attempt          INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL CHECK (max_attempts >= 1),
    lease_ttl_us     INTEGER NOT NULL CHECK (lease_ttl_us > 0),
    lease_token      TEXT,
    lease_owner      TEXT,
    lease_expires_at INTEGER,
    heartbeat_at     INTEGER,
    lock_key         TEXT,
    partition_key    TEXT,
    idempotency_key  TEXT,
    args_hash        TEXT,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    progress         TEXT,
    checkpoint       TEXT,
    result           TEXT,
    last_error       TEXT,
    created_at       INTEGER NOT NULL,
    started_at       INTEGER,
    finished_at      INTEGER,
    updated_at       INTEGER NOT NULL
) STRICT;

-- Each index costs work on every transition: these are the ones a query
-- needs, partial where only some states are ever searched.

-- The claim walks this in order: best priority, then run_at, then id.
CREATE INDEX jobd_jobs_claim_idx ON jobd_jobs (queue, priority, run_at, id)
    WHERE state = 'queued';

-- The reaper finds expired leases.
CREATE INDEX jobd_jobs_lease_idx ON jobd_jobs (lease_expires_at)
    WHERE state = 'running';

-- One running job per lock_key, enforced by the database itself. The claim
-- also uses it to skip jobs whose key is held.
CREATE UNIQUE INDEX jobd_jobs_lock_idx ON jobd_jobs (lock_key)
    WHERE state = 'running' AND lock_key IS NOT NULL;

-- An idempotency key names one job for as long as it is retained.
CREATE UNIQUE INDEX jobd_jobs_idempotency_idx ON jobd_jobs (idempotency_key)
    WHERE idempotency_key IS NOT NULL;

-- Active-duplicate dedupe: one queued or running job per args hash.
CREATE UNIQUE INDEX jobd_jobs_active_idx ON jobd_jobs (args_hash)
    WHERE args_hash IS NOT NULL AND state IN ('queued', 'running');

-- Retention prunes finished jobs by age.
CREATE INDEX jobd_jobs_finished_idx ON jobd_jobs (finished_at)
    WHERE state IN ('succeeded', 'failed', 'canceled');

-- The "updated since" feed.
CREATE INDEX jobd_jobs_updated_idx ON jobd_jobs (updated_at, id);

-- AUTOINCREMENT so that event ids never go back, even after pruning
-- deleted the newest rows: clients may use them as a cursor. No foreign
-- key: JobPrune deletes a job's events with it.
CREATE TABLE jobd_job_events (
    id      INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
    job_id  TEXT    NOT NULL,
    at      INTEGER NOT NULL,
    kind    TEXT    NOT NULL,
    attempt INTEGER NOT NULL,
    detail  TEXT    NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX jobd_job_events_job_idx ON jobd_job_events (job_id, id);

CREATE TABLE jobd_queues (
    name       TEXT    NOT NULL PRIMARY KEY,
    paused     INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;

CREATE TABLE jobd_leaders (
    name       TEXT    NOT NULL PRIMARY KEY,
    node       TEXT    NOT NULL,
    expires_at INTEGER NOT NULL
) STRICT;

-- hash is the SHA-256 of the secret; the secret itself is never stored.
-- scopes is a JSON array of strings.
CREATE TABLE jobd_api_keys (
    id         TEXT    NOT NULL PRIMARY KEY,
    name       TEXT    NOT NULL,
    prefix     TEXT    NOT NULL UNIQUE,
    hash       BLOB    NOT NULL,
    scopes     TEXT    NOT NULL DEFAULT '[]',
    created_at INTEGER NOT NULL
) STRICT;
