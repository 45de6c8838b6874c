-- Records a step (JobStep), in the transaction that fenced it: $1 job,
-- $2 name, $3 result, $4 attempt, $5 started_at, $6 finished_at.
INSERT INTO jobd_job_steps (job_id, name, result, attempt, started_at, finished_at)
VALUES ($1, $2, $3, $4, $5, $6);
