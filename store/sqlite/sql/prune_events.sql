-- Deletes the events of the jobs in :ids, a JSON array of ids.
DELETE FROM jobd_job_events
WHERE job_id IN (SELECT value FROM json_each(:ids))
