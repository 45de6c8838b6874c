SELECT id, job_id, at, kind, attempt, detail
FROM jobd_job_events
WHERE job_id = ?
ORDER BY id
