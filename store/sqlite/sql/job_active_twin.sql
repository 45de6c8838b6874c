-- The queued or running job with this args hash (at most one: see
-- jobd_jobs_active_idx).
SELECT * FROM jobd_jobs WHERE args_hash = ? AND state IN ('queued', 'running')
