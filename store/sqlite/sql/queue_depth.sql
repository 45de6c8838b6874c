-- One queue's queued jobs (QueueDepth): :now the store's time, :queue the
-- queue. The due ones (run_at reached) and the scheduled ones. Read from
-- the claim index, which holds every column it needs: the cost is the
-- queue's queued jobs, never the table nor another queue.
SELECT coalesce(sum(run_at <= :now), 0), coalesce(sum(run_at > :now), 0)
FROM jobd_jobs INDEXED BY jobd_jobs_claim_idx
WHERE queue = :queue AND state = 'queued'
