-- A sign of life of a worker: :status ('' keeps the recorded one, save
-- offline, which becomes active); :done and :failed jobs finished since.
UPDATE jobd_workers
SET last_heartbeat_at = :now,
    status = CASE
        WHEN :status <> '' THEN :status
        WHEN status = 'offline' THEN 'active'
        ELSE status
    END,
    jobs_done = jobs_done + :done,
    jobs_failed = jobs_failed + :failed,
    updated_at = :now
WHERE id = :id
