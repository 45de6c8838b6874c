-- Asks a running job to stop: its holder sees the flag at its next
-- heartbeat or progress report, and finishes it canceled.
UPDATE jobd_jobs
SET cancel_requested = 1,
    updated_at = :stamp
WHERE id = :id AND state = 'running'
RETURNING *
