-- The number of jobs the feed matches, cursor aside: a range on
-- jobd_jobs_updated_idx.
SELECT count(*) FROM jobd_jobs
WHERE (:queue = '' OR queue = :queue)
  AND (:kind = '' OR kind = :kind)
  AND (:states = '' OR state IN (SELECT value FROM json_each(:states)))
  AND (:lock_key = '' OR lock_key = :lock_key)
  AND (:partition_key = '' OR partition_key = :partition_key)
  AND (:idempotency_key = '' OR idempotency_key = :idempotency_key)
  AND (:queues_limited = 0 OR queue IN (SELECT value FROM json_each(:queue_names))
       OR EXISTS (SELECT 1 FROM json_each(:queue_prefixes) AS p
                  WHERE substr(queue, 1, length(p.value)) = p.value))
  AND updated_at >= :since
