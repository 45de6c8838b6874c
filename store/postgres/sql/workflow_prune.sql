-- Retention of workflows: deletes the finished workflows whose
-- finished_at is before $1, oldest first, with all their tasks (and
-- their journals) and edges: as many as hold at most $2 tasks together,
-- and at least one. A workflow a concurrent transaction holds (a retry)
-- is skipped. Returns the number of tasks deleted. The workflows come
-- from their finished_at index, their tasks from the workflow index,
-- their edges from the edges' primary key.
WITH candidate AS (
    SELECT id, tasks, finished_at
    FROM jobd_workflows
    WHERE finished_at < $1
    ORDER BY finished_at, id
    LIMIT $2
    FOR UPDATE SKIP LOCKED
),
doomed AS (
    SELECT id
    FROM (SELECT id, sum(tasks) OVER (ORDER BY finished_at, id) - tasks AS before FROM candidate) c
    WHERE before < $2
),
tasks AS (
    DELETE FROM jobd_jobs j USING doomed d
    WHERE j.workflow_id = d.id
    RETURNING j.id
),
edges AS (
    DELETE FROM jobd_workflow_edges e USING tasks t
    WHERE e.job_id = t.id
),
workflows AS (
    DELETE FROM jobd_workflows w USING doomed d
    WHERE w.id = d.id
)
SELECT count(*) FROM tasks;
