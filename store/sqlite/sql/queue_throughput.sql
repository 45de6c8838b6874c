-- Jobs finished since :since (unix microseconds), counted by queue,
-- minute of finished_at and final state: a range on
-- jobd_jobs_finished_idx, whose cost grows with the window's jobs, not
-- with the table.
SELECT queue, (finished_at / 60000000) * 60000000 AS minute, state, count(*)
FROM jobd_jobs
WHERE finished_at >= :since
  AND state IN ('succeeded', 'failed', 'canceled')
GROUP BY 1, 2, 3
ORDER BY 1, 2, 3
