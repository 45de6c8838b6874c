-- Jobs finished since $1, counted by queue, minute of finished_at and
-- final state. A finished job's updated_at is its finished_at (nothing
-- writes a finished job but an operator's retry, which makes it queued),
-- so the range on jobd_jobs_updated reads only the jobs changed since $1:
-- the cost grows with the window's jobs, not with the table.
SELECT queue, date_trunc('minute', finished_at) AS minute, state, count(*)
FROM jobd_jobs
WHERE updated_at >= $1::timestamptz
  AND finished_at >= $1::timestamptz
  AND state IN ('succeeded', 'failed', 'canceled')
GROUP BY 1, 2, 3
ORDER BY 1, 2, 3;
