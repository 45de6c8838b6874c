-- Marks a job's signal delivered: a wait took it.
UPDATE jobd_signals SET delivered_at = :now WHERE job_id = :id AND name = :name
