-- Records a step (JobStep), in the transaction that fenced it.
INSERT INTO jobd_job_steps (job_id, name, result, attempt, started_at, finished_at)
VALUES (:id, :name, :result, :attempt, :started_at, :now)
