-- Marks offline the workers silent since $2 (cutoff); $1 now. The
-- condition is re-checked on each row after any concurrent update of it
-- commits (READ COMMITTED re-evaluates the WHERE on the newest version),
-- so a heartbeat that commits first keeps its worker online, and one that
-- commits after sets the status back.
UPDATE jobd_workers SET
    status = 'offline',
    updated_at = coalesce($1::timestamptz, now())
WHERE status <> 'offline'
  AND coalesce(last_heartbeat_at, created_at) <= $2::timestamptz;
