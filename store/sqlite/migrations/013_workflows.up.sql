-- 013: workflows (docs/workflows.md): jobs that depend on jobs.
--
-- A job gains the state 'waiting': not queued, never claimed, no lease,
-- waiting for what wait_for says ('dependencies' for a workflow task
-- whose dependencies are not all final; later issues add more). SQLite
-- cannot alter a CHECK, so jobd_jobs is rebuilt, the documented way
-- (https://www.sqlite.org/lang_altertable.html#otheralter), in this
-- migration's transaction: a new table with the new CHECKs and the
-- task's columns, every row copied, the old table dropped, the new one
-- renamed (its primary key's index with it), and every index of the old
-- one made again. jobd_jobs has no triggers, no views read it and no
-- foreign key names it, so foreign_keys (which a transaction cannot turn
-- off) checks nothing here. The columns keep their order, the task's
-- ones at the end (scan.go's jobColumns).
--
-- A task's columns (NULL for a job outside any workflow):
--   workflow_id, workflow_ref: the workflow and the task's ref in it.
--   run_on: 'success' or 'any' (job.RunOn).
--   wait_for: what a waiting job waits for; set exactly while waiting.
--   dependencies: how many tasks it depends on; pending: how many of
--     them are not final yet, while it waits.
--   canceled_by: the dependency whose failure or cancel canceled it.
CREATE TABLE jobd_jobs_new (
    id               TEXT    NOT NULL PRIMARY KEY,
    queue            TEXT    NOT NULL,
    kind             TEXT    NOT NULL,
    args             TEXT    NOT NULL,
    state            TEXT    NOT NULL
        CHECK (state IN ('waiting', 'queued', 'running', 'succeeded', 'failed', 'canceled')),
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
    updated_at       INTEGER NOT NULL,
    requires         TEXT,
    prefers          TEXT,
    attempted_at     INTEGER,
    journal          TEXT,
    trace_parent     TEXT,
    schedule         TEXT,
    scheduled_for    INTEGER,
    timeout_us       INTEGER,
    deadline         INTEGER,
    rerun            INTEGER NOT NULL DEFAULT 0,
    previous_state   TEXT,
    previous_result  TEXT,
    callback_url     TEXT,
    idempotency_fingerprint TEXT,
    outcome_token    TEXT,
    outcome          TEXT,
    outcome_owner    TEXT,
    workflow_id      TEXT,
    workflow_ref     TEXT,
    run_on           TEXT,
    wait_for         TEXT,
    dependencies     INTEGER,
    pending          INTEGER,
    canceled_by      TEXT,
    CONSTRAINT jobd_jobs_wait_for
        CHECK ((state = 'waiting') = (wait_for IS NOT NULL) AND wait_for IN ('dependencies')),
    CONSTRAINT jobd_jobs_task
        CHECK ((workflow_id IS NULL) = (run_on IS NULL) AND run_on IN ('success', 'any'))
) STRICT;

INSERT INTO jobd_jobs_new (
    id, queue, kind, args, state, priority, run_at, attempt, max_attempts, lease_ttl_us,
    lease_token, lease_owner, lease_expires_at, heartbeat_at, lock_key, partition_key,
    idempotency_key, args_hash, cancel_requested, progress, checkpoint, result, last_error,
    created_at, started_at, finished_at, updated_at, requires, prefers, attempted_at, journal,
    trace_parent, schedule, scheduled_for, timeout_us, deadline, rerun, previous_state,
    previous_result, callback_url, idempotency_fingerprint, outcome_token, outcome, outcome_owner)
SELECT
    id, queue, kind, args, state, priority, run_at, attempt, max_attempts, lease_ttl_us,
    lease_token, lease_owner, lease_expires_at, heartbeat_at, lock_key, partition_key,
    idempotency_key, args_hash, cancel_requested, progress, checkpoint, result, last_error,
    created_at, started_at, finished_at, updated_at, requires, prefers, attempted_at, journal,
    trace_parent, schedule, scheduled_for, timeout_us, deadline, rerun, previous_state,
    previous_result, callback_url, idempotency_fingerprint, outcome_token, outcome, outcome_owner
FROM jobd_jobs;

DROP TABLE jobd_jobs;
ALTER TABLE jobd_jobs_new RENAME TO jobd_jobs;

-- Every index of the old table (001_jobs), as it was.
CREATE INDEX jobd_jobs_claim_idx ON jobd_jobs (queue, priority, run_at, id)
    WHERE state = 'queued';
CREATE INDEX jobd_jobs_lease_idx ON jobd_jobs (lease_expires_at)
    WHERE state = 'running';
CREATE UNIQUE INDEX jobd_jobs_lock_idx ON jobd_jobs (lock_key)
    WHERE state = 'running' AND lock_key IS NOT NULL;
CREATE UNIQUE INDEX jobd_jobs_idempotency_idx ON jobd_jobs (idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE UNIQUE INDEX jobd_jobs_active_idx ON jobd_jobs (args_hash)
    WHERE args_hash IS NOT NULL AND state IN ('queued', 'running');
CREATE INDEX jobd_jobs_finished_idx ON jobd_jobs (finished_at)
    WHERE state IN ('succeeded', 'failed', 'canceled');
CREATE INDEX jobd_jobs_updated_idx ON jobd_jobs (updated_at, id);

-- The tasks of a workflow, in id order (each after its dependencies):
-- its reads, cancel, retry and prune. Only tasks have an entry.
CREATE INDEX jobd_jobs_workflow_idx ON jobd_jobs (workflow_id, id)
    WHERE workflow_id IS NOT NULL;

-- A workflow (see the PostgreSQL schema, 014_workflows): its tasks are
-- jobs; succeeded, failed and canceled count those final in each state.
CREATE TABLE jobd_workflows (
    id                      TEXT    NOT NULL PRIMARY KEY,
    name                    TEXT    NOT NULL,
    state                   TEXT    NOT NULL
        CHECK (state IN ('running', 'succeeded', 'failed', 'canceled')),
    idempotency_key         TEXT,
    idempotency_fingerprint TEXT,
    tasks                   INTEGER NOT NULL CHECK (tasks > 0),
    succeeded               INTEGER NOT NULL DEFAULT 0,
    failed                  INTEGER NOT NULL DEFAULT 0,
    canceled                INTEGER NOT NULL DEFAULT 0,
    journal                 TEXT,
    created_at              INTEGER NOT NULL,
    updated_at              INTEGER NOT NULL,
    finished_at             INTEGER,
    CONSTRAINT jobd_workflows_counts CHECK (
        succeeded >= 0 AND failed >= 0 AND canceled >= 0
        AND succeeded + failed + canceled <= tasks),
    CONSTRAINT jobd_workflows_finished CHECK ((state = 'running') = (finished_at IS NULL))
) STRICT;

CREATE UNIQUE INDEX jobd_workflows_idempotency_idx ON jobd_workflows (idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX jobd_workflows_name_idx ON jobd_workflows (name, id);
CREATE INDEX jobd_workflows_finished_idx ON jobd_workflows (finished_at)
    WHERE finished_at IS NOT NULL;

-- The dependencies: task job_id depends on task depends_on; indexed
-- both ways (a task's dependencies by the primary key, its dependents by
-- the other).
CREATE TABLE jobd_workflow_edges (
    job_id     TEXT NOT NULL,
    depends_on TEXT NOT NULL,
    PRIMARY KEY (job_id, depends_on)
) STRICT, WITHOUT ROWID;
CREATE INDEX jobd_workflow_edges_depends_on_idx ON jobd_workflow_edges (depends_on, job_id);

-- The outbox's workflow events (workflow.finished).
ALTER TABLE jobd_webhook_events ADD COLUMN workflow_id TEXT;
ALTER TABLE jobd_webhook_events ADD COLUMN workflow_name TEXT;
ALTER TABLE jobd_webhook_events ADD COLUMN workflow_state TEXT;
