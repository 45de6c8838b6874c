-- Cancels a queued job at once.
UPDATE jobd_jobs
SET state = 'canceled',
    finished_at = :now,
    updated_at = :now
WHERE id = :id AND state = 'queued'
RETURNING *
