-- Writes rate limits: $1 subscription ids, $2 events, $3 keys, $4 sent_at,
-- $5 suppressed, $6 window_start, $7 window_count, one element per limit.
UPDATE jobd_webhook_limits l SET
    sent_at = v.sent_at,
    suppressed = v.suppressed,
    window_start = v.window_start,
    window_count = v.window_count
FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::integer[],
            $6::timestamptz[], $7::integer[])
    AS v(webhook_id, event, key, sent_at, suppressed, window_start, window_count)
WHERE l.webhook_id = v.webhook_id AND l.event = v.event AND l.key = v.key;
