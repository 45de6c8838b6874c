-- The partitions' throttles not passed at :now, up to :max of each queue,
-- the soonest to end first.
SELECT queue, partition_key, throttled_until
FROM (SELECT queue, partition_key, throttled_until,
             row_number() OVER (PARTITION BY queue ORDER BY throttled_until, partition_key) AS n
      FROM jobd_queue_partitions
      WHERE throttled_until > :now)
WHERE n <= :max
ORDER BY queue, throttled_until, partition_key
