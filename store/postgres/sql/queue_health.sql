-- The health of every queue and the remote workers, in one statement
-- (QueueHealth). $1 now (NULL: the database's now()); $2 the most queues
-- reported; $3 how many due jobs with a lock_key each queue checks for a
-- busy lock. One row per queue ('queue'), per worker status ('worker'),
-- and one with the time ('now'):
--   what, name, flag (paused, disabled), n1 (queued, workers), n2
--   (scheduled), n3 (running), at (oldest due run_at, now), n4 (blocked).
--
-- Only the active jobs are read: the queued ones from the claim index
-- (queue, priority, run_at, id WHERE state = 'queued'), which holds every
-- column the counts need, the running ones from the lease index (the
-- rows whose lease_expires_at is set are the running ones). Finished
-- jobs, most of the table, are never touched.
WITH clock AS (
    SELECT coalesce($1::timestamptz, now()) AS now
),
queued AS (
    SELECT queue,
           count(*) AS queued,
           count(*) FILTER (WHERE run_at > (SELECT now FROM clock)) AS scheduled,
           min(run_at) FILTER (WHERE run_at <= (SELECT now FROM clock)) AS oldest
    FROM jobd_jobs
    WHERE state = 'queued'
    GROUP BY queue
),
running AS (
    SELECT queue, count(*) AS running
    FROM jobd_jobs
    WHERE lease_expires_at IS NOT NULL
    GROUP BY queue
),
names AS (
    SELECT queue FROM queued
    UNION
    SELECT queue FROM running
    UNION
    SELECT name FROM jobd_queues
    ORDER BY 1
    LIMIT $2
),
-- The head of each queue with a due job: its first $3 due jobs in claim
-- order (a walk of the claim index), those with a lock_key probing the
-- lock index for a running holder. Bounded by $3 rows per queue whatever
-- the backlog.
blocked AS (
    SELECT q.queue, count(*) FILTER (WHERE h.lock_key IS NOT NULL AND EXISTS (
               SELECT 1 FROM jobd_jobs r
               WHERE r.lock_key = h.lock_key AND r.state = 'running')) AS blocked
    FROM queued q
    JOIN names USING (queue)
    CROSS JOIN LATERAL (
        SELECT j.lock_key
        FROM jobd_jobs j
        WHERE j.state = 'queued'
          AND j.queue = q.queue
          AND j.run_at <= (SELECT now FROM clock)
        ORDER BY j.priority, j.run_at, j.id
        LIMIT $3
    ) h
    WHERE q.oldest IS NOT NULL
    GROUP BY q.queue
)
SELECT 'queue' AS what, n.queue AS name, coalesce(s.paused, false) AS flag,
       coalesce(q.queued, 0) AS n1, coalesce(q.scheduled, 0) AS n2,
       coalesce(r.running, 0) AS n3, q.oldest AS at, coalesce(b.blocked, 0) AS n4
FROM names n
LEFT JOIN queued q ON q.queue = n.queue
LEFT JOIN running r ON r.queue = n.queue
LEFT JOIN blocked b ON b.queue = n.queue
LEFT JOIN jobd_queues s ON s.name = n.queue
UNION ALL
SELECT 'worker', status, disabled, count(*), 0, 0, NULL, 0
FROM jobd_workers
GROUP BY status, disabled
UNION ALL
SELECT 'now', '', false, 0, 0, 0, now, 0
FROM clock;
