-- One step of a job ($1), by name ($2).
SELECT name, result, attempt, started_at, finished_at
FROM jobd_job_steps
WHERE job_id = $1 AND name = $2;
