-- A page of workflows, newest first. $1 name (NULL: any), $2 states
-- (NULL: any), $3 the cursor, the last id of the previous page (NULL:
-- from the newest), $4 the page's size. A name's page walks the name
-- index from the cursor, any other the primary key.
SELECT id, name, state, coalesce(idempotency_key, ''), tasks, succeeded, failed, canceled,
       created_at, updated_at, finished_at
FROM jobd_workflows
WHERE ($1::text IS NULL OR name = $1::text)
  AND ($2::text[] IS NULL OR state = ANY ($2::text[]))
  AND ($3::uuid IS NULL OR id < $3::uuid)
ORDER BY id DESC
LIMIT $4;
