-- The settings of every queue that has a settings row, by name: paused,
-- the limits (NULL for none), the throttle of the whole queue when it has
-- not passed at $1 (NULL: the database's now()), and up to $2 of its
-- partitions' throttles that have not passed, the soonest to end first.
-- Reads no job.
SELECT q.name, q.paused, q.global_limit, q.partition_limit, q.rate_limit, q.rate_period,
       q.rate_by, q.rate_burst, q.throttle_by,
       CASE WHEN q.throttled_until > coalesce($1::timestamptz, now()) THEN q.throttled_until END,
       coalesce(t.keys, '{}'), coalesce(t.untils, '{}')
FROM jobd_queues q
LEFT JOIN LATERAL (
    SELECT array_agg(p.partition_key ORDER BY p.throttled_until, p.partition_key) AS keys,
           array_agg(p.throttled_until ORDER BY p.throttled_until, p.partition_key) AS untils
    FROM (SELECT partition_key, throttled_until
          FROM jobd_queue_partitions
          WHERE queue = q.name
            AND throttled_until > coalesce($1::timestamptz, now())
          ORDER BY throttled_until, partition_key
          LIMIT $2) p
) t ON true
ORDER BY q.name;
