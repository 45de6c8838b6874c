-- Sets the throttle_by of queue :name to :throttle_by when it has none,
-- creating its settings row, and keeps every other setting. It returns
-- the queue's name when it set it, no row when a throttle_by was set
-- already. (One writer at a time holds the file: nothing changes the row
-- between the test and the write; the PostgreSQL twin says why one
-- statement matters there.)
INSERT INTO jobd_queues (name, throttle_by, created_at, updated_at)
VALUES (:name, :throttle_by, :now, :now)
ON CONFLICT (name) DO UPDATE SET
    throttle_by = excluded.throttle_by,
    updated_at = excluded.updated_at
WHERE throttle_by IS NULL
RETURNING name
