-- The newest updated_at of any job (0 without jobs): a write's stamp
-- comes after it. The min/max optimisation reads it off the end of
-- jobd_jobs_updated_idx.
SELECT coalesce(max(updated_at), 0) FROM jobd_jobs
