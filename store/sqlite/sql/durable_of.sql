-- Of the jobs of :ids (a JSON array of ids), the durable ones (they
-- recorded a step, spawned a child or waited) and the signal of their
-- last signal wait: what a claim reads what they resume from for.
SELECT id, coalesce(signal_wait, '')
FROM jobd_jobs
WHERE id IN (SELECT value FROM json_each(:ids)) AND durable = 1
