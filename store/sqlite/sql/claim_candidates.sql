-- The jobs a claim may take, best first: queued in an unpaused queue, due,
-- and with no running job holding their lock_key (the lock index answers
-- that). Several candidates may share a lock_key; the caller keeps the
-- first of each. The claim index serves both the filter and the order.
SELECT j.id, j.lock_key
FROM jobd_jobs AS j
WHERE j.state = 'queued'
  AND j.queue = :queue
  AND j.run_at <= :now
  AND NOT EXISTS (
      SELECT 1 FROM jobd_queues AS q WHERE q.name = :queue AND q.paused)
  AND (j.lock_key IS NULL OR NOT EXISTS (
      SELECT 1 FROM jobd_jobs AS r
      WHERE r.state = 'running' AND r.lock_key = j.lock_key))
ORDER BY j.priority, j.run_at, j.id
LIMIT :scan
