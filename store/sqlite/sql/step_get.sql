-- One step of a job, by name.
SELECT name, result, attempt, started_at, finished_at
FROM jobd_job_steps
WHERE job_id = :id AND name = :name
