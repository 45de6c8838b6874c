-- Stores a subscription; :events is a JSON array of strings, :queue and
-- :kind '' for any.
INSERT INTO jobd_webhooks (id, url, events, secret, queue, kind, config, created_at, updated_at)
VALUES (:id, :url, :events, :secret, nullif(:queue, ''), nullif(:kind, ''), :config, :now, :now)
