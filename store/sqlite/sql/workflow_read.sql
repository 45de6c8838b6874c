-- One workflow's row, for the write transaction that changes it
-- (store.DecideWorkflows). :id its id.
SELECT id, name, state, coalesce(idempotency_key, ''), tasks, succeeded, failed, canceled,
       created_at, updated_at, finished_at
FROM jobd_workflows
WHERE id = :id
