-- Sets the throttle_by of queue $2 to $3 when it has none, creating its
-- settings row, and keeps every other setting; $1 now. It returns, when
-- it set it, whether the queue counts its running jobs (a global_limit or
-- a partition_limit: see the driver's limitedQueues); no row when a
-- throttle_by was set already.
--
-- One statement, so no read of the row goes stale before the write: ON
-- CONFLICT DO UPDATE locks the queue's row and tests its WHERE on the
-- row's latest committed version, even under READ COMMITTED. A concurrent
-- queue_set_limits.sql commits first (and its limits, throttle_by
-- included, are what this tests and keeps) or waits for this one. It also
-- waits for a limited claim of the queue in progress (flow_lock.sql).
-- Nothing is woken: a throttle_by allows nothing more.
INSERT INTO jobd_queues AS q (name, throttle_by, created_at, updated_at)
VALUES ($2, $3, coalesce($1::timestamptz, now()), coalesce($1::timestamptz, now()))
ON CONFLICT (name) DO UPDATE SET
    throttle_by = excluded.throttle_by,
    updated_at = excluded.updated_at
WHERE q.throttle_by IS NULL
RETURNING q.global_limit IS NOT NULL OR q.partition_limit IS NOT NULL;
