-- 014: durable execution (docs/steps-and-children.md): steps, children,
-- signals and waits (see the PostgreSQL schema, 015_durable).
--
-- wait_for gains 'children' and 'signal'. SQLite cannot alter a CHECK,
-- so jobd_jobs is rebuilt as 013_workflows rebuilt it (see there), with
-- the new columns at the end (scan.go):
--   parent_id, child_key: the job that spawned this one and the key it
--     gave it, unique per parent.
--   signal_wait: the name of the signal of the job's last signal wait.
--   durable: 1 once the job recorded a step, spawned a child or waited.
--
-- jobd_job_steps and jobd_signals name jobd_jobs in foreign keys (ON
-- DELETE CASCADE: they go with their job). A later migration that
-- rebuilds jobd_jobs the same way must keep their rows: with
-- foreign_keys on, DROP TABLE jobd_jobs deletes every row first, which
-- cascades; copy them aside and back.
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
    parent_id        TEXT,
    child_key        TEXT,
    signal_wait      TEXT,
    durable          INTEGER,
    CONSTRAINT jobd_jobs_wait_for
        CHECK ((state = 'waiting') = (wait_for IS NOT NULL)
               AND wait_for IN ('dependencies', 'children', 'signal')),
    CONSTRAINT jobd_jobs_child CHECK ((parent_id IS NULL) = (child_key IS NULL)),
    CONSTRAINT jobd_jobs_task
        CHECK ((workflow_id IS NULL) = (run_on IS NULL) AND run_on IN ('success', 'any'))
) STRICT;

INSERT INTO jobd_jobs_new (
    id, queue, kind, args, state, priority, run_at, attempt, max_attempts, lease_ttl_us,
    lease_token, lease_owner, lease_expires_at, heartbeat_at, lock_key, partition_key,
    idempotency_key, args_hash, cancel_requested, progress, checkpoint, result, last_error,
    created_at, started_at, finished_at, updated_at, requires, prefers, attempted_at, journal,
    trace_parent, schedule, scheduled_for, timeout_us, deadline, rerun, previous_state,
    previous_result, callback_url, idempotency_fingerprint, outcome_token, outcome, outcome_owner,
    workflow_id, workflow_ref, run_on, wait_for, dependencies, pending, canceled_by)
SELECT
    id, queue, kind, args, state, priority, run_at, attempt, max_attempts, lease_ttl_us,
    lease_token, lease_owner, lease_expires_at, heartbeat_at, lock_key, partition_key,
    idempotency_key, args_hash, cancel_requested, progress, checkpoint, result, last_error,
    created_at, started_at, finished_at, updated_at, requires, prefers, attempted_at, journal,
    trace_parent, schedule, scheduled_for, timeout_us, deadline, rerun, previous_state,
    previous_result, callback_url, idempotency_fingerprint, outcome_token, outcome, outcome_owner,
    workflow_id, workflow_ref, run_on, wait_for, dependencies, pending, canceled_by
FROM jobd_jobs;

DROP TABLE jobd_jobs;
ALTER TABLE jobd_jobs_new RENAME TO jobd_jobs;

-- Every index of the old table (001_jobs, 013_workflows), as it was.
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


-- A parent's children, by key (idempotent spawning; the claim of a
-- resumed parent reads them by it).
CREATE UNIQUE INDEX jobd_jobs_children_idx ON jobd_jobs (parent_id, child_key)
    WHERE parent_id IS NOT NULL;

-- The steps a job completed, one per (job, name).
CREATE TABLE jobd_job_steps (
    job_id      TEXT    NOT NULL REFERENCES jobd_jobs (id) ON DELETE CASCADE,
    name        TEXT    NOT NULL,
    result      TEXT,
    attempt     INTEGER NOT NULL,
    started_at  INTEGER NOT NULL,
    finished_at INTEGER NOT NULL,
    PRIMARY KEY (job_id, name)
) STRICT, WITHOUT ROWID;

-- The signals sent to a job, one per (job, name): kept until a wait
-- delivers them (delivered_at).
CREATE TABLE jobd_signals (
    job_id       TEXT    NOT NULL REFERENCES jobd_jobs (id) ON DELETE CASCADE,
    name         TEXT    NOT NULL,
    payload      TEXT,
    sent_at      INTEGER NOT NULL,
    delivered_at INTEGER,
    PRIMARY KEY (job_id, name)
) STRICT, WITHOUT ROWID;
