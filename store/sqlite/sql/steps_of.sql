-- The steps of the jobs of :ids (a JSON array of ids), by job and name
-- (the primary key's order; readSteps puts each job's in the order they
-- were recorded).
SELECT job_id, name, result, attempt, started_at, finished_at
FROM jobd_job_steps
WHERE job_id IN (SELECT value FROM json_each(:ids))
ORDER BY job_id, name
