-- 015: durable execution (docs/steps-and-children.md): steps, children,
-- signals and waits.
--
-- A job's new columns, all nullable without a default (adding them
-- rewrites nothing); none but parent_id is in an index, and parent_id
-- never changes, so updates stay HOT.
--   parent_id, child_key: the job that spawned this one and the key it
--     gave it (job.ChildEnd), unique per parent.
--   signal_wait: the name of the signal of the job's last signal wait,
--     which the claim that resumes it reads (jobd_signals).
--   durable: set once the job recorded a step, spawned a child or
--     waited: only such a job's claim reads what it resumes from.
ALTER TABLE jobd_jobs
    ADD COLUMN parent_id   uuid,
    ADD COLUMN child_key   text,
    ADD COLUMN signal_wait text,
    ADD COLUMN durable     boolean;
ALTER TABLE jobd_jobs DROP CONSTRAINT jobd_jobs_wait_for;
ALTER TABLE jobd_jobs ADD CONSTRAINT jobd_jobs_wait_for
    CHECK ((state = 'waiting') = (wait_for IS NOT NULL)
           AND wait_for IN ('dependencies', 'children', 'signal')) NOT VALID;
ALTER TABLE jobd_jobs ADD CONSTRAINT jobd_jobs_child
    CHECK ((parent_id IS NULL) = (child_key IS NULL)) NOT VALID;

-- A parent's children, by key: spawning is idempotent per (parent, key),
-- and the claim that resumes a parent reads its children by this index.
CREATE UNIQUE INDEX jobd_jobs_children ON jobd_jobs (parent_id, child_key)
    WHERE parent_id IS NOT NULL;

-- The steps a job completed, one row per (job, name), written by the
-- lease holder's step record (fenced by its lease) and read by the claim
-- that resumes the job. Deleted with the job.
CREATE TABLE jobd_job_steps (
    job_id      uuid NOT NULL REFERENCES jobd_jobs (id) ON DELETE CASCADE,
    name        text NOT NULL,
    result      jsonb,
    attempt     integer NOT NULL,
    started_at  timestamptz NOT NULL,
    finished_at timestamptz NOT NULL,
    PRIMARY KEY (job_id, name)
);

-- The signals sent to a job, one per (job, name): a signal sent before
-- the job waits for it is kept here (delivered_at NULL) and delivered
-- when it does; a second one of the same name replaces the payload of
-- one not delivered yet, or is kept for the next wait once the first was
-- delivered. Deleted with the job.
CREATE TABLE jobd_signals (
    job_id       uuid NOT NULL REFERENCES jobd_jobs (id) ON DELETE CASCADE,
    name         text NOT NULL,
    payload      jsonb,
    sent_at      timestamptz NOT NULL,
    delivered_at timestamptz,
    PRIMARY KEY (job_id, name)
);
