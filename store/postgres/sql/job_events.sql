-- A job's journal, oldest first. $1 job id.
SELECT id, job_id, at, kind, attempt, coalesce(detail, '')
FROM jobd_job_events
WHERE job_id = $1
ORDER BY id;
