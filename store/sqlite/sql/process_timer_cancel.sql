-- Cancels a replaced timer job if it is still queued. One that already
-- runs is the task doing the replacing (the process's lock_key lets no
-- other run), so it is left to finish.
UPDATE jobd_jobs
SET state = 'canceled',
    finished_at = :now,
    updated_at = :stamp
WHERE id = :id AND state = 'queued'
RETURNING attempt
