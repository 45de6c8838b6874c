-- Stores an API key record. $1 now (the creation time when $7 is NULL),
-- $8 the worker it belongs to (NULL for none), $9 the queues it is
-- limited to ('{}': none).
INSERT INTO jobd_api_keys (id, name, prefix, hash, scopes, created_at, worker_id, queues)
VALUES ($2, $3, $4, $5, $6, coalesce($7::timestamptz, $1::timestamptz, now()), $8, $9);
