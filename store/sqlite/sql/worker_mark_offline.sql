-- Marks offline the workers silent since :cutoff. SQLite serialises
-- writers, so a heartbeat either committed before (the row no longer
-- matches) or comes after (and sets the status back). Returns the
-- workers marked, whose worker.offline events the driver records in the
-- outbox (webhook_events_offline.sql) in this same transaction.
UPDATE jobd_workers
SET status = 'offline', updated_at = :now
WHERE status <> 'offline'
  AND coalesce(last_heartbeat_at, created_at) <= :cutoff
RETURNING id
