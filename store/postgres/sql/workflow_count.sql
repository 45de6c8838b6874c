-- The number of workflows workflow_list.sql's filters ($1 name, $2
-- states) match.
SELECT count(*)
FROM jobd_workflows
WHERE ($1::text IS NULL OR name = $1::text)
  AND ($2::text[] IS NULL OR state = ANY ($2::text[]));
