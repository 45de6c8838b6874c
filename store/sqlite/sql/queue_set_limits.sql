-- Replaces the flow control of queue :name (flow.Limits, checked by the
-- driver), creating its settings row: NULL for none. The rate state of
-- the whole queue goes without a rate of the whole queue
-- (queue_clear_partitions.sql drops the partitions' state the new limits
-- give no meaning to).
INSERT INTO jobd_queues (name, global_limit, partition_limit, rate_limit, rate_period_us, rate_by,
                         rate_burst, throttle_by, created_at, updated_at)
VALUES (:name, :global_limit, :partition_limit, :rate_limit, :rate_period_us, :rate_by,
        :rate_burst, :throttle_by, :now, :now)
ON CONFLICT (name) DO UPDATE SET
    global_limit = excluded.global_limit,
    partition_limit = excluded.partition_limit,
    rate_limit = excluded.rate_limit,
    rate_period_us = excluded.rate_period_us,
    rate_by = excluded.rate_by,
    rate_burst = excluded.rate_burst,
    throttle_by = excluded.throttle_by,
    rate_tat = CASE WHEN excluded.rate_limit IS NOT NULL AND excluded.rate_by IS NULL THEN rate_tat END,
    updated_at = excluded.updated_at
RETURNING paused
