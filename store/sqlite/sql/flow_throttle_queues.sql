-- Sets the throttles of the whole queue of outcomes JobFinish applies in
-- this transaction (store.ThrottlesOf): :throttles is a JSON array of
-- {"id", "until" (unix µs)}; the jobs of queues whose throttle_by is
-- partition_key are flow_throttle_partitions.sql's. A queue's throttle
-- ends at the later of the one already set and the new one; its settings
-- row is created when it has none, and several throttles of one queue
-- meet in the DO UPDATE. Each job is found by primary key.
INSERT INTO jobd_queues (name, throttled_until, created_at, updated_at)
SELECT j.queue, t.value ->> 'until', :now, :now
FROM json_each(:throttles) AS t
CROSS JOIN jobd_jobs AS j
LEFT JOIN jobd_queues AS q ON q.name = j.queue
WHERE j.id = t.value ->> 'id' AND q.throttle_by IS NULL
ON CONFLICT (name) DO UPDATE
SET throttled_until = max(coalesce(throttled_until, excluded.throttled_until), excluded.throttled_until)
