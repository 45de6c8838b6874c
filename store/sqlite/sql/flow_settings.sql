-- The flow-control settings and state of queue :queue, for a claim in the
-- write transaction (see flowClaim). No row for a queue without settings.
SELECT paused, limited, global_limit, partition_limit, rate_limit, rate_period_us, rate_by,
       rate_burst, throttle_by, rate_tat, throttled_until
FROM jobd_queues
WHERE name = :queue
