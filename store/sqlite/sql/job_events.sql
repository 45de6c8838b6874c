-- What a job's journal is rendered from (job.Journal): the columns that
-- imply its common entries and the stored ones. No row when there is no
-- such job.
SELECT id, state, attempt, coalesce(lease_owner, ''), created_at, attempted_at, finished_at, journal,
       coalesce(dependencies, 0)
FROM jobd_jobs
WHERE id = ?
