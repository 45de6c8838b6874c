-- Replaces a subscription's url, events, filter and config, and its
-- secret unless $5 is NULL. $1 now; $2 id, $3 url, $4 events, $5 secret,
-- $6 queue and $7 kind (NULL: any), $8 config. No row when there is none.
UPDATE jobd_webhooks SET
    url = $3,
    events = $4,
    secret = coalesce($5, secret),
    queue = $6,
    kind = $7,
    config = $8,
    updated_at = coalesce($1::timestamptz, now())
WHERE id = $2
RETURNING id, url, events, secret, coalesce(queue, ''), coalesce(kind, ''), config, created_at, updated_at;
