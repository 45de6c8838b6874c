-- Inserts a workflow's row (store.WorkflowSubmit), running, none of its
-- tasks final, or nothing when a retained workflow holds its
-- idempotency key (the driver then looks that one up:
-- workflow_lookup.sql). :key and :fingerprint are '' for none.
INSERT INTO jobd_workflows (id, name, state, idempotency_key, idempotency_fingerprint, tasks,
                            created_at, updated_at)
VALUES (:id, :name, 'running', nullif(:key, ''), nullif(:fingerprint, ''), :tasks, :now, :now)
ON CONFLICT DO NOTHING
RETURNING id, name, state, coalesce(idempotency_key, ''), tasks, succeeded, failed, canceled,
       created_at, updated_at, finished_at
