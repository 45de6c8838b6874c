-- Returns the rate limits $1 (subscription ids), $2 (events), $3 (keys)
-- name, creating those that do not exist yet, each locked until the
-- transaction ends: ON CONFLICT DO UPDATE locks the row it finds (a
-- concurrent creator's once it commits) and returns its newest version.
-- Rows are taken in key order, so that two transactions lock them in one
-- order; the caller sorts what comes back.
INSERT INTO jobd_webhook_limits AS l (webhook_id, event, key)
SELECT DISTINCT * FROM unnest($1::text[], $2::text[], $3::text[])
ORDER BY 1, 2, 3
ON CONFLICT (webhook_id, event, key) DO UPDATE SET key = l.key
RETURNING l.webhook_id, l.event, l.key, l.sent_at, l.suppressed, l.window_start, l.window_count;
