-- Up to :limit rate limits that suppressed alerts and last sent one at or
-- before :before, oldest sent first.
SELECT webhook_id, event, key, sent_at, suppressed, window_start, window_count
FROM jobd_webhook_limits
WHERE suppressed > 0 AND sent_at <= :before
ORDER BY sent_at
LIMIT :limit
