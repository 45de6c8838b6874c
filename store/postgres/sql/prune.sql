-- Retention: deletes finished jobs whose finished_at is before $1, at most
-- $2 of them, with their journal. They are found through the feed's index
-- on updated_at: a finished job is never written again, so its
-- updated_at equals its finished_at (see the migration). Outbox events
-- older than $1 go too, at most $2 of them: a store whose events nobody
-- dispatches (an engine embedded without package webhook) keeps them no
-- longer than its jobs. So do up to $2 rows of the partitions' flow
-- state (jobd_queue_partitions) that say nothing any more: their rate
-- state and their throttle have passed at $3 (NULL: the database's now()).
WITH doomed AS (
    SELECT id
    FROM jobd_jobs
    WHERE updated_at < $1
      AND state IN ('succeeded', 'failed', 'canceled')
      AND workflow_id IS NULL -- a task goes with its workflow (workflow_prune.sql)
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
-- The DELETE checks its condition again on a row a throttle or a claim
-- changed since the statement's snapshot.
passed AS (
    DELETE FROM jobd_queue_partitions p
    WHERE (p.queue, p.partition_key) IN (
            SELECT queue, partition_key FROM jobd_queue_partitions
            WHERE coalesce(rate_tat <= coalesce($3::timestamptz, now()), true)
              AND coalesce(throttled_until <= coalesce($3::timestamptz, now()), true)
            LIMIT $2
            FOR UPDATE SKIP LOCKED)
      AND coalesce(p.rate_tat <= coalesce($3::timestamptz, now()), true)
      AND coalesce(p.throttled_until <= coalesce($3::timestamptz, now()), true)
),
deleted AS (
    DELETE FROM jobd_jobs j USING doomed WHERE j.id = doomed.id
    RETURNING j.id
)
SELECT count(*) FROM deleted;
