-- Sets the throttles of the partitions ('' for a job without a
-- partition_key) of outcomes whose queue's throttle_by is partition_key:
-- see flow_throttle_queues.sql.
INSERT INTO jobd_queue_partitions (queue, partition_key, throttled_until)
SELECT j.queue, coalesce(j.partition_key, ''), t.value ->> 'until'
FROM json_each(:throttles) AS t
CROSS JOIN jobd_jobs AS j
JOIN jobd_queues AS q ON q.name = j.queue
WHERE j.id = t.value ->> 'id' AND q.throttle_by IS NOT NULL
ON CONFLICT (queue, partition_key) DO UPDATE
SET throttled_until = max(coalesce(throttled_until, excluded.throttled_until), excluded.throttled_until)
