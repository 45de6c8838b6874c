-- The edges of workflow :id: each task and the tasks it depends on, by
-- the workflow index and the edges' primary key (the driver sorts them).
SELECT e.job_id, e.depends_on
FROM jobd_jobs AS j
CROSS JOIN jobd_workflow_edges AS e
WHERE j.workflow_id = :id AND e.job_id = j.id
