-- Marks offline the workers silent since $2 (cutoff); $1 now. The
-- condition is re-checked on each row after any concurrent update of it
-- commits (READ COMMITTED re-evaluates the WHERE on the newest version),
-- so a heartbeat that commits first keeps its worker online, and one that
-- commits after sets the status back. Each worker marked records a
-- worker.offline event in the outbox, in this same statement
-- (store.WebhookStore). Returns how many it marked.
WITH marked AS (
    UPDATE jobd_workers SET
        status = 'offline',
        updated_at = coalesce($1::timestamptz, now())
    WHERE status <> 'offline'
      AND coalesce(last_heartbeat_at, created_at) <= $2::timestamptz
    RETURNING id, name, updated_at
),
events AS (
    INSERT INTO jobd_webhook_events (type, at, worker_id, worker_name)
    SELECT 'worker.offline', updated_at, id, name FROM marked
)
SELECT count(*) FROM marked;
