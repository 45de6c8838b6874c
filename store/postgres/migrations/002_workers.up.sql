-- 002: remote workers, their API keys, and jobs' capability rules.

-- The registry of remote workers. status is what the worker last said of
-- itself (active, idle, busy) or offline, set by the leader when its
-- heartbeats stopped; disabled is the operator's switch, kept apart so
-- that enabling a worker gives it back its status.
CREATE TABLE jobd_workers (
    id                text PRIMARY KEY,
    name              text NOT NULL,
    capabilities      text[] NOT NULL DEFAULT '{}',
    metadata          jsonb NOT NULL DEFAULT '{}',
    status            text NOT NULL DEFAULT 'idle'
                      CHECK (status IN ('active', 'idle', 'busy', 'offline')),
    disabled          boolean NOT NULL DEFAULT false,
    last_heartbeat_at timestamptz,
    jobs_done         bigint NOT NULL DEFAULT 0,
    jobs_failed       bigint NOT NULL DEFAULT 0,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL
);

-- A worker's key belongs to it; the driver deletes the keys with the
-- worker, in one transaction (no foreign key: keys predate workers).
ALTER TABLE jobd_api_keys ADD COLUMN worker_id text;
CREATE INDEX jobd_api_keys_worker ON jobd_api_keys (worker_id)
    WHERE worker_id IS NOT NULL;

-- NULL, never '{}', when a job has none: the claim's test of a job
-- without rules is then one IS NULL. Adding nullable columns without a
-- default rewrites nothing.
ALTER TABLE jobd_jobs ADD COLUMN requires text[];
ALTER TABLE jobd_jobs ADD COLUMN prefers text[];
