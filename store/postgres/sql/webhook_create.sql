-- Stores a subscription. $1 now; $2 id, $3 url, $4 events, $5 secret,
-- $6 queue and $7 kind (NULL: any), $8 whether the configuration owns it.
INSERT INTO jobd_webhooks (id, url, events, secret, queue, kind, config, created_at, updated_at)
VALUES ($2, $3, $4, $5, $6, $7, $8, coalesce($1::timestamptz, now()), coalesce($1::timestamptz, now()));
