-- 014: workflows (docs/workflows.md): jobs that depend on jobs.
--
-- A job gains the state 'waiting': not queued, never claimed, no lease,
-- waiting for what wait_for says ('dependencies' for a workflow task
-- whose dependencies are not all final; later issues add more). The
-- state's CHECK is replaced. The new CHECKs are added NOT VALID: every
-- row already passes them (the old CHECK allowed fewer states, and the
-- new columns are NULL), and validating would read the whole table under
-- the ACCESS EXCLUSIVE lock this migration holds; rows written from now
-- on are checked all the same.
ALTER TABLE jobd_jobs DROP CONSTRAINT jobd_jobs_state_check;
ALTER TABLE jobd_jobs ADD CONSTRAINT jobd_jobs_state_check
    CHECK (state IN ('waiting', 'queued', 'running', 'succeeded', 'failed', 'canceled')) NOT VALID;

-- A task's columns, all nullable without a default (NULL for a job
-- outside any workflow): adding them rewrites nothing. None is in an
-- index but workflow_id, which never changes, so updates stay HOT.
--   workflow_id, workflow_ref: the workflow and the task's ref in it.
--   run_on: 'success' or 'any' (job.RunOn).
--   wait_for: what a waiting job waits for; set exactly while waiting.
--   dependencies: how many tasks it depends on; pending: how many of
--     them are not final yet, while it waits.
--   canceled_by: the dependency whose failure or cancel canceled it.
ALTER TABLE jobd_jobs
    ADD COLUMN workflow_id  uuid,
    ADD COLUMN workflow_ref text,
    ADD COLUMN run_on       text,
    ADD COLUMN wait_for     text,
    ADD COLUMN dependencies integer,
    ADD COLUMN pending      integer,
    ADD COLUMN canceled_by  uuid;
ALTER TABLE jobd_jobs ADD CONSTRAINT jobd_jobs_wait_for
    CHECK ((state = 'waiting') = (wait_for IS NOT NULL) AND wait_for IN ('dependencies')) NOT VALID;
ALTER TABLE jobd_jobs ADD CONSTRAINT jobd_jobs_task
    CHECK ((workflow_id IS NULL) = (run_on IS NULL) AND run_on IN ('success', 'any')) NOT VALID;

-- The tasks of a workflow, in id order (each after its dependencies):
-- its reads, cancel, retry and prune. Only tasks have an entry.
CREATE INDEX jobd_jobs_workflow ON jobd_jobs (workflow_id, id)
    WHERE workflow_id IS NOT NULL;

-- A workflow. Its tasks are jobs; succeeded, failed and canceled count
-- those final in each state, kept by the transaction of each task's
-- final state, so that the workflow's state is known without counting
-- its tasks. journal holds its entries but the first ("submitted", at
-- created_at), as a job's journal column does (job.WorkflowJournal).
CREATE TABLE jobd_workflows (
    id                      uuid PRIMARY KEY, -- UUIDv7
    name                    text NOT NULL,
    state                   text NOT NULL
                            CHECK (state IN ('running', 'succeeded', 'failed', 'canceled')),
    idempotency_key         text,
    idempotency_fingerprint text,
    tasks                   integer NOT NULL CHECK (tasks > 0),
    succeeded               integer NOT NULL DEFAULT 0,
    failed                  integer NOT NULL DEFAULT 0,
    canceled                integer NOT NULL DEFAULT 0,
    journal                 jsonb,
    created_at              timestamptz NOT NULL,
    updated_at              timestamptz NOT NULL,
    finished_at             timestamptz,
    CONSTRAINT jobd_workflows_counts CHECK (
        succeeded >= 0 AND failed >= 0 AND canceled >= 0
        AND succeeded + failed + canceled <= tasks),
    CONSTRAINT jobd_workflows_finished CHECK ((state = 'running') = (finished_at IS NULL))
) WITH (
    -- Each task's end rewrites its workflow's row: kept HOT (no indexed
    -- column changes but at the end) in the free room of its page.
    fillfactor = 70,
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_analyze_scale_factor = 0.02,
    autovacuum_vacuum_cost_delay = 0
);

-- An idempotency key names one workflow for as long as it is retained.
CREATE UNIQUE INDEX jobd_workflows_idempotency ON jobd_workflows (idempotency_key)
    WHERE idempotency_key IS NOT NULL;
-- The list by name, newest first.
CREATE INDEX jobd_workflows_name ON jobd_workflows (name, id);
-- Retention: finished workflows, oldest first.
CREATE INDEX jobd_workflows_finished_at ON jobd_workflows (finished_at)
    WHERE finished_at IS NOT NULL;

-- The dependencies: task job_id depends on task depends_on. Written
-- once with the workflow, deleted with it; no foreign keys (the driver
-- deletes a workflow's rows together, as it does a job's). Indexed both
-- ways: a task's dependencies (its inputs, at its claim) by the primary
-- key, a task's dependents (at its end) by the other.
CREATE TABLE jobd_workflow_edges (
    job_id     uuid NOT NULL,
    depends_on uuid NOT NULL,
    PRIMARY KEY (job_id, depends_on)
);
CREATE INDEX jobd_workflow_edges_depends_on ON jobd_workflow_edges (depends_on, job_id);

-- The outbox's workflow events (workflow.finished).
ALTER TABLE jobd_webhook_events
    ADD COLUMN workflow_id    uuid,
    ADD COLUMN workflow_name  text,
    ADD COLUMN workflow_state text;
