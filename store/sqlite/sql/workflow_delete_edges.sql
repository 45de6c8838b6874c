-- Deletes workflow :id's edges, found by the workflow index and the
-- edges' primary key.
DELETE FROM jobd_workflow_edges
WHERE job_id IN (SELECT id FROM jobd_jobs WHERE workflow_id = :id)
