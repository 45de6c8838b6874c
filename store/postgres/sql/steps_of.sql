-- The steps of a job ($1), in the order they were recorded.
SELECT name, result, attempt, started_at, finished_at
FROM jobd_job_steps
WHERE job_id = $1
ORDER BY finished_at, name;
