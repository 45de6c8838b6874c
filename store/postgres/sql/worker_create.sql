-- Registers a worker. $1 now, $2 id, $3 name, $4 capabilities, $5 metadata,
-- $6 queues.
INSERT INTO jobd_workers (id, name, capabilities, metadata, queues, status, created_at, updated_at)
VALUES ($2, $3, $4, $5, $6, 'idle', coalesce($1::timestamptz, now()), coalesce($1::timestamptz, now()));
