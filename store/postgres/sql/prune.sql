-- Retention: deletes finished jobs whose finished_at is before $1, at most
-- $2 of them, with their journal. They are found through the feed's index
-- on updated_at: a finished job is never written again, so its
-- updated_at equals its finished_at (see the migration). Outbox events
-- older than $1 go too, at most $2 of them: a store whose events nobody
-- dispatches (an engine embedded without package webhook) keeps them no
-- longer than its jobs.
WITH doomed AS (
    SELECT id
    FROM jobd_jobs
    WHERE updated_at < $1
      AND state IN ('succeeded', 'failed', 'canceled')
      AND finished_at < $1
    ORDER BY updated_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
),
stale AS (
    DELETE FROM jobd_webhook_events
    WHERE id IN (SELECT id FROM jobd_webhook_events WHERE at < $1
                 ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED)
),
deleted AS (
    DELETE FROM jobd_jobs j USING doomed WHERE j.id = doomed.id
    RETURNING j.id
)
SELECT count(*) FROM deleted;
