-- Every subscription, oldest first.
SELECT id, url, events, secret, coalesce(queue, ''), coalesce(kind, ''), config, created_at, updated_at
FROM jobd_webhooks
ORDER BY created_at, id;
