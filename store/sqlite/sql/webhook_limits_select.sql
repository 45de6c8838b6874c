-- The rate limits of :keys, a JSON array of [webhook, event, key], in key
-- order.
SELECT l.webhook_id, l.event, l.key, l.sent_at, l.suppressed, l.window_start, l.window_count
FROM jobd_webhook_limits AS l
WHERE EXISTS (SELECT 1 FROM json_each(:keys) AS k
              WHERE l.webhook_id = k.value ->> 0 AND l.event = k.value ->> 1 AND l.key = k.value ->> 2)
ORDER BY l.webhook_id, l.event, l.key
