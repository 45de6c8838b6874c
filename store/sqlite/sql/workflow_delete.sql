-- Deletes workflow :id's row (the driver deleted its edges and tasks
-- first: workflow_delete_edges.sql, workflow_delete_tasks.sql).
DELETE FROM jobd_workflows WHERE id = :id
