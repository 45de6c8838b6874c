-- Deletes up to :limit rows of the partitions' flow state that say nothing
-- any more: their rate state and their throttle have passed at :now.
DELETE FROM jobd_queue_partitions
WHERE (queue, partition_key) IN (
    SELECT queue, partition_key FROM jobd_queue_partitions
    WHERE coalesce(rate_tat <= :now, 1) AND coalesce(throttled_until <= :now, 1)
    LIMIT :limit
)
