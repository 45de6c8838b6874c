-- Advances the rate state of partitions of queue :queue after a limited
-- claim: :batch is a JSON array of {"key", "tat" (unix µs)}.
INSERT INTO jobd_queue_partitions (queue, partition_key, rate_tat)
SELECT :queue, value ->> 'key', value ->> 'tat'
FROM json_each(:batch)
WHERE true
ON CONFLICT (queue, partition_key) DO UPDATE SET rate_tat = excluded.rate_tat
