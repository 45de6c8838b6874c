-- Writes rate limits: :limits is a JSON array of {"webhook", "event",
-- "key", "sent_at", "suppressed", "window_start", "window_count"}, times
-- in unix microseconds (absent: NULL).
UPDATE jobd_webhook_limits
SET sent_at = v.value ->> 'sent_at',
    suppressed = v.value ->> 'suppressed',
    window_start = v.value ->> 'window_start',
    window_count = v.value ->> 'window_count'
FROM json_each(:limits) AS v
WHERE jobd_webhook_limits.webhook_id = v.value ->> 'webhook'
  AND jobd_webhook_limits.event = v.value ->> 'event'
  AND jobd_webhook_limits.key = v.value ->> 'key'
