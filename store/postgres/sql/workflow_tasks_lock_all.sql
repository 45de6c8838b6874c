-- Locks every task of workflow $1, in id order, found by the workflow
-- index, before its delete (workflow_delete.sql).
SELECT j.id
FROM jobd_jobs j
WHERE j.workflow_id = $1
ORDER BY j.id
FOR UPDATE;
