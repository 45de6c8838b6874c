-- The partitions of queue :queue with flow state in force at :now: a
-- throttle not passed, a rate whose next start is still ahead.
SELECT partition_key, rate_tat, throttled_until
FROM jobd_queue_partitions
WHERE queue = :queue AND (throttled_until > :now OR rate_tat > :now)
