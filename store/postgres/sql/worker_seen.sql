-- A sign of life of worker $2; $1 now, $3 its status ('' keeps the
-- recorded one, save offline, which becomes active), $4 and $5 jobs
-- finished since (succeeded, failed).
UPDATE jobd_workers SET
    last_heartbeat_at = coalesce($1::timestamptz, now()),
    status = CASE
        WHEN $3::text <> '' THEN $3::text
        WHEN status = 'offline' THEN 'active'
        ELSE status
    END,
    jobs_done = jobs_done + $4,
    jobs_failed = jobs_failed + $5,
    updated_at = coalesce($1::timestamptz, now())
WHERE id = $2;
