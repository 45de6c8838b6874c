-- Locks and returns up to $2 rate limits that suppressed alerts and last
-- sent one at or before $1, oldest sent first, skipping those another
-- transaction holds.
SELECT webhook_id, event, key, sent_at, suppressed, window_start, window_count
FROM jobd_webhook_limits
WHERE suppressed > 0 AND sent_at <= $1
ORDER BY sent_at
LIMIT $2
FOR UPDATE SKIP LOCKED;
