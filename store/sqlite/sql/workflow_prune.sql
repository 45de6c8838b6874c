-- Retention of workflows: the finished workflows whose finished_at is
-- before :before, oldest first, as many as hold at most :limit tasks
-- together, and at least one; the driver deletes each with its tasks and
-- edges (workflow_delete.sql).
SELECT id
FROM (SELECT id, sum(tasks) OVER (ORDER BY finished_at, id) - tasks AS before_it
      FROM (SELECT id, tasks, finished_at FROM jobd_workflows
            WHERE finished_at < :before ORDER BY finished_at, id LIMIT :limit))
WHERE before_it < :limit
