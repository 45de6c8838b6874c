-- Cancels a queued job at once.
UPDATE jobd_jobs
SET state = 'canceled',
    finished_at = :now,
    updated_at = :stamp
WHERE id = :id AND state = 'queued'
RETURNING *
