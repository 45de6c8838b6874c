-- Every queue that has jobs or a setting, with its job count per state
-- (one row per queue and state; state is NULL for a queue with no jobs).
SELECT coalesce(c.queue, q.name) AS name, coalesce(q.paused, false), c.state, coalesce(c.jobs, 0)
FROM (
    SELECT queue, state, count(*) AS jobs FROM jobd_jobs GROUP BY queue, state
) c
FULL JOIN jobd_queues q ON q.name = c.queue
ORDER BY 1, 3;
