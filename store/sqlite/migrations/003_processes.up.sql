-- 003: durable processes. (The PostgreSQL migration of the same number
-- says why each is so.) Times are unix microseconds, JSON is TEXT.

CREATE TABLE jobd_processes (
    namespace     TEXT    NOT NULL,
    id            TEXT    NOT NULL,
    status        TEXT    NOT NULL DEFAULT 'running'
        CHECK (status IN ('running', 'error')),
    detail        TEXT    NOT NULL DEFAULT '',
    aux_state     TEXT,
    metadata      TEXT,
    timer_at      INTEGER,
    timer_job     TEXT,
    last_event_id INTEGER NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    PRIMARY KEY (namespace, id)
) STRICT, WITHOUT ROWID;

CREATE INDEX jobd_processes_status_idx ON jobd_processes (namespace, status, id);

CREATE TABLE jobd_process_events (
    namespace  TEXT    NOT NULL,
    process_id TEXT    NOT NULL,
    event_id   INTEGER NOT NULL,
    at         INTEGER NOT NULL,
    payload    TEXT,
    PRIMARY KEY (namespace, process_id, event_id)
) STRICT, WITHOUT ROWID;
