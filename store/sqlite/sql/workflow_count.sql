-- The number of workflows workflow_list.sql's filters (:name, :states)
-- match.
SELECT count(*)
FROM jobd_workflows
WHERE (:name = '' OR name = :name)
  AND (:states = '' OR state IN (SELECT value FROM json_each(:states)))
