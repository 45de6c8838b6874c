-- One page of jobs, oldest first; the filters are job_list_newest.sql's.
-- Without a cursor, :after is '', which sorts before every uuid, so that
-- the cursor is always a plain range on the primary key.
SELECT * FROM jobd_jobs
WHERE (:queue = '' OR queue = :queue)
  AND (:kind = '' OR kind = :kind)
  AND (:states = '' OR state IN (SELECT value FROM json_each(:states)))
  AND (:lock_key = '' OR lock_key = :lock_key)
  AND (:partition_key = '' OR partition_key = :partition_key)
  AND id > :after
ORDER BY id
LIMIT :limit
