-- Inserts a workflow's row (store.WorkflowSubmit), running, none of its
-- tasks final. $1 now (NULL: the database's now()), $2 its id, $3 its
-- name, $4 its idempotency key (NULL: none), $5 the fingerprint of its
-- request (NULL: none), $6 its number of tasks. ON CONFLICT DO NOTHING:
-- a retained workflow with the key (committed, or inserted by a
-- concurrent transaction, which the insert waits for) skips the row, and
-- the driver looks it up (workflow_lookup.sql); the tasks' insert, in
-- the same round, then inserts nothing (workflow_tasks_insert.sql).
INSERT INTO jobd_workflows (id, name, state, idempotency_key, idempotency_fingerprint, tasks,
                            created_at, updated_at)
VALUES ($2, $3, 'running', $4, $5, $6, coalesce($1::timestamptz, now()), coalesce($1::timestamptz, now()))
ON CONFLICT DO NOTHING
RETURNING id, name, state, coalesce(idempotency_key, ''), tasks, succeeded, failed, canceled,
          created_at, updated_at, finished_at;
