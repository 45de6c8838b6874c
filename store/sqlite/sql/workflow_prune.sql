-- Retention of workflows: up to :limit finished workflows whose
-- finished_at is before :before, oldest first, with their numbers of
-- tasks; the driver takes as many as hold at most :limit tasks together,
-- and at least one, and deletes each with its tasks and edges
-- (workflow_delete_edges.sql, workflow_delete_tasks.sql,
-- workflow_delete.sql). Found by the finished_at index, in its order.
SELECT id, tasks
FROM jobd_workflows
WHERE finished_at < :before
ORDER BY finished_at
LIMIT :limit
