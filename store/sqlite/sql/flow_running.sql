-- The partition ('' for none) of every running job of queue :queue, for a
-- limited claim to count. The lease index holds every running job and no
-- other: no index serves the running jobs of one queue, and none is
-- added, for every index on jobd_jobs costs every claim and finish. (No
-- GROUP BY: the driver counts, without a temporary b-tree.)
SELECT coalesce(partition_key, '')
FROM jobd_jobs INDEXED BY jobd_jobs_lease_idx
WHERE state = 'running' AND queue = :queue
