-- Applies decided changes of workflows (store.DecideWorkflows) whose
-- rows this transaction locked (workflow_lock.sql). It decides nothing:
-- $1 now; one element per workflow: $2 ids, $3 new states, $4 its tasks
-- succeeded, $5 failed, $6 canceled, $7 finished_at (NULL: cleared), $8
-- the entries to append to its journal (NULL: none), $9 whether it just
-- ended, which records its workflow.finished event in the outbox, in
-- this same statement (store.WebhookStore). Returns how many it changed.
WITH changed AS (
    UPDATE jobd_workflows w SET
        state = d.state,
        succeeded = d.succeeded,
        failed = d.failed,
        canceled = d.canceled,
        finished_at = d.finished_at,
        journal = CASE WHEN d.entries IS NULL THEN w.journal
                       ELSE coalesce(w.journal, '[]'::jsonb) || d.entries END,
        updated_at = coalesce($1::timestamptz, now())
    FROM unnest($2::uuid[], $3::text[], $4::integer[], $5::integer[], $6::integer[],
                $7::timestamptz[], $8::jsonb[], $9::boolean[])
        AS d(id, state, succeeded, failed, canceled, finished_at, entries, finished)
    WHERE w.id = ANY (ARRAY[d.id])
    RETURNING w.id, w.name, w.state, w.finished_at, w.updated_at, d.finished
),
-- A data-modifying CTE runs whether or not the statement reads it.
outbox AS (
    INSERT INTO jobd_webhook_events (type, at, workflow_id, workflow_name, workflow_state, finished_at)
    SELECT 'workflow.finished', updated_at, id, name, state, finished_at
    FROM changed
    WHERE finished
)
SELECT count(*) FROM changed;
