-- A page of workflows, newest first: :name ('' for any), :states (a JSON
-- array; '' for any), after the cursor :after ('' from the newest), at
-- most :limit.
SELECT id, name, state, coalesce(idempotency_key, ''), tasks, succeeded, failed, canceled,
       created_at, updated_at, finished_at
FROM jobd_workflows
WHERE (:name = '' OR name = :name)
  AND (:states = '' OR state IN (SELECT value FROM json_each(:states)))
  AND (:after = '' OR id < :after)
ORDER BY id DESC
LIMIT :limit
