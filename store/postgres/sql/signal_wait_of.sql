-- The signal a job ($1) last waited for ('' for none).
SELECT coalesce(signal_wait, '') FROM jobd_jobs WHERE id = $1;
