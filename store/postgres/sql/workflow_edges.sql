-- The edges of workflow $1: each task (by id) and the tasks it depends
-- on, found by the workflow index and the edges' primary key.
SELECT e.job_id, e.depends_on
FROM jobd_jobs j
JOIN jobd_workflow_edges e ON e.job_id = j.id
WHERE j.workflow_id = $1
ORDER BY e.job_id, e.depends_on;
