-- One subscription. $1 id.
SELECT id, url, events, secret, coalesce(queue, ''), coalesce(kind, ''), config, created_at, updated_at
FROM jobd_webhooks
WHERE id = $1;
