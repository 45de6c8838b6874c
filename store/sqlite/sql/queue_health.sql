-- The health of every queue and the remote workers, in one statement
-- (QueueHealth). :now the store's time; :max_queues the most queues
-- reported; :lock_scan how many due jobs with a lock_key each queue checks
-- for a busy lock. One row per queue ('queue'), per worker status
-- ('worker'), and one with the time ('now'):
--   what, name, flag (paused, disabled), n1 (queued, workers), n2
--   (scheduled), n3 (running), at (oldest due run_at, now), n4 (blocked).
--
-- Only the active jobs are read, through the partial indexes of the
-- queued (the claim index, which holds every column the counts need) and
-- of the running ones (the lease index); finished jobs are never touched.
WITH queued AS (
    SELECT queue,
           count(*) AS queued,
           count(*) FILTER (WHERE run_at > :now) AS scheduled,
           min(run_at) FILTER (WHERE run_at <= :now) AS oldest
    FROM jobd_jobs INDEXED BY jobd_jobs_claim_idx
    WHERE state = 'queued'
    GROUP BY queue
),
running AS (
    SELECT queue, count(*) AS running
    FROM jobd_jobs INDEXED BY jobd_jobs_lease_idx
    WHERE state = 'running'
    GROUP BY queue
),
names AS (
    SELECT queue FROM queued
    UNION
    SELECT queue FROM running
    UNION
    SELECT name FROM jobd_queues
    ORDER BY 1
    LIMIT :max_queues
)
SELECT 'queue' AS what, n.queue AS name, coalesce(s.paused, 0) AS flag,
       coalesce(q.queued, 0) AS n1, coalesce(q.scheduled, 0) AS n2,
       coalesce(r.running, 0) AS n3, q.oldest AS at,
       -- The head of the queue: its first :lock_scan due jobs in claim
       -- order, those with a lock_key probing the lock index for a
       -- running holder.
       CASE WHEN q.oldest IS NULL THEN 0 ELSE (
           SELECT count(*)
           FROM (
               SELECT j.lock_key
               FROM jobd_jobs j INDEXED BY jobd_jobs_claim_idx
               WHERE j.state = 'queued'
                 AND j.queue = n.queue
                 AND j.run_at <= :now
               ORDER BY j.priority, j.run_at, j.id
               LIMIT :lock_scan
           ) h
           WHERE h.lock_key IS NOT NULL AND EXISTS (
               SELECT 1 FROM jobd_jobs r
               WHERE r.lock_key = h.lock_key AND r.state = 'running')
       ) END AS n4
FROM names n
LEFT JOIN queued q ON q.queue = n.queue
LEFT JOIN running r ON r.queue = n.queue
LEFT JOIN jobd_queues s ON s.name = n.queue
UNION ALL
SELECT 'worker', status, disabled, count(*), 0, 0, NULL, 0
FROM jobd_workers
GROUP BY status, disabled
UNION ALL
SELECT 'now', '', 0, 0, 0, 0, :now, 0;
