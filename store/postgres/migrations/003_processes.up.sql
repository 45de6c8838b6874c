-- 003: durable processes (progressor-style state machines run as jobs).

-- One row per process instance. The pending timer is a job (kind
-- process.timeout or process.remove) of the process's lock_key; timer_job
-- names it so that replacing the timer can cancel it.
CREATE TABLE jobd_processes (
    namespace     text NOT NULL,
    id            text NOT NULL,
    status        text NOT NULL DEFAULT 'running'
                  CHECK (status IN ('running', 'error')),
    detail        text NOT NULL DEFAULT '',
    aux_state     jsonb,
    metadata      jsonb,
    timer_at      timestamptz,
    timer_job     uuid,
    last_event_id bigint NOT NULL DEFAULT 0,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    PRIMARY KEY (namespace, id)
);

-- Listing a namespace by status ("which processes are in error?").
CREATE INDEX jobd_processes_status ON jobd_processes (namespace, status, id);

-- A process's history; event_id counts 1, 2, 3... per process.
CREATE TABLE jobd_process_events (
    namespace  text NOT NULL,
    process_id text NOT NULL,
    event_id   bigint NOT NULL,
    at         timestamptz NOT NULL,
    payload    jsonb,
    PRIMARY KEY (namespace, process_id, event_id)
);
