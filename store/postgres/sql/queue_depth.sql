-- One queue's queued jobs (QueueDepth): $1 now (NULL: the database's
-- now()), $2 the queue. The due ones (run_at reached) and the scheduled
-- ones. Read from the claim index (queue, priority, run_at, id WHERE
-- state = 'queued'), which holds every column it needs: the cost is the
-- queue's queued jobs, never the table nor another queue.
SELECT count(*) FILTER (WHERE run_at <= coalesce($1::timestamptz, now())),
       count(*) FILTER (WHERE run_at > coalesce($1::timestamptz, now()))
FROM jobd_jobs
WHERE queue = $2 AND state = 'queued';
