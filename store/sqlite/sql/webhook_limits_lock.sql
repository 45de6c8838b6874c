-- Creates the rate limits of :keys, a JSON array of [webhook, event, key],
-- that do not exist yet, then (webhook_limits_select.sql) reads them all:
-- the write lock this transaction holds keeps them until it ends.
INSERT INTO jobd_webhook_limits (webhook_id, event, key)
SELECT k.value ->> 0, k.value ->> 1, k.value ->> 2
FROM json_each(:keys) AS k
WHERE true
ON CONFLICT DO NOTHING
