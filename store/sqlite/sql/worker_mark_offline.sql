-- Marks offline the workers silent since :cutoff. SQLite serialises
-- writers, so a heartbeat either committed before (the row no longer
-- matches) or comes after (and sets the status back).
UPDATE jobd_workers
SET status = 'offline', updated_at = :now
WHERE status <> 'offline'
  AND coalesce(last_heartbeat_at, created_at) <= :cutoff
