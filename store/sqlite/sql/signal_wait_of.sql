-- The signal a job last waited for ('' for none).
SELECT coalesce(signal_wait, '') FROM jobd_jobs WHERE id = :id
