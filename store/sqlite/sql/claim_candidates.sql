-- The jobs a claim may take, best first, with their lock_key and
-- partition ('' for none): queued, due, and with no running job holding
-- their lock_key (the lock index answers that), in a queue that is not
-- paused, and, unless :limited is 1, neither limited nor throttled (a
-- limited queue is claimed by the limited path: see flowClaim). Several
-- candidates may share a lock_key; the caller keeps the first of each. The
-- limited path passes the partitions that can start nothing now
-- (:blocked, a JSON array; NULL for none). The claim index serves both
-- the filter and the order.
-- Capability rules (:caps, the claimer's, a JSON array; :worker its
-- worker id or NULL; :window the prefer window in µs): a job without any
-- (requires and prefers NULL) pays two IS NULL tests.
SELECT j.id, j.lock_key, coalesce(j.partition_key, '')
FROM jobd_jobs AS j
WHERE j.state = 'queued'
  AND j.queue = :queue
  -- The claimer's cursor (:after 1 when set): only jobs after it.
  AND (:after = 0 OR (j.priority, j.run_at, j.id) > (:after_priority, :after_run_at, :after_id))
  AND j.run_at <= :now
  AND (:blocked IS NULL OR coalesce(j.partition_key, '') NOT IN (SELECT value FROM json_each(:blocked)))
  AND (j.lock_key IS NULL OR NOT EXISTS (
      SELECT 1 FROM jobd_jobs AS r
      WHERE r.state = 'running' AND r.lock_key = j.lock_key))
  AND (j.requires IS NULL OR NOT EXISTS (
      SELECT 1 FROM json_each(j.requires) AS c
      WHERE c.value NOT IN (SELECT value FROM json_each(:caps))))
  AND (j.prefers IS NULL
       OR NOT EXISTS (
          SELECT 1 FROM json_each(j.prefers) AS c
          WHERE c.value NOT IN (SELECT value FROM json_each(:caps)))
       OR j.run_at + :window <= :now
       -- Nobody else who has them is online, enabled and has room.
       OR NOT EXISTS (
          SELECT 1 FROM jobd_workers AS w
          WHERE w.status IN ('idle', 'active')
            AND NOT w.disabled
            AND w.id IS NOT :worker
            AND NOT EXISTS (
                SELECT 1 FROM json_each(j.prefers) AS c
                WHERE c.value NOT IN (SELECT value FROM json_each(w.capabilities)))))
ORDER BY j.priority, j.run_at, j.id
-- The probe of the queue's settings, in the LIMIT, runs once: a queue it
-- refuses costs no walk of its jobs (in the WHERE clause, SQLite walked
-- them all, testing it for each).
LIMIT CASE WHEN EXISTS (
          SELECT 1 FROM jobd_queues AS q
          WHERE q.name = :queue
            AND (q.paused OR (:limited = 0 AND (q.limited OR q.throttled_until > :now))))
      THEN 0 ELSE :scan END
