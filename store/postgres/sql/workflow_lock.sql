-- Locks workflows $1 (ids) in id order, after the tasks a transaction
-- changes (see workflow_reach_lock.sql), and returns their rows, for
-- store.DecideWorkflows to decide their counters and states from the
-- latest committed version; the last column is the transaction's time
-- ($2 now, NULL: the database's now()).
SELECT id, name, state, coalesce(idempotency_key, ''), tasks, succeeded, failed, canceled,
       created_at, updated_at, finished_at, coalesce($2::timestamptz, now())
FROM jobd_workflows
WHERE id = ANY ($1::uuid[])
ORDER BY id
FOR UPDATE;
