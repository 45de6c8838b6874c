-- One workflow by id, with its stored journal.
SELECT id, name, state, coalesce(idempotency_key, ''), tasks, succeeded, failed, canceled,
       created_at, updated_at, finished_at, journal
FROM jobd_workflows
WHERE id = :id
