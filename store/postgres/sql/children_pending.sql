-- How many of a parent's ($1) children are not final.
SELECT count(*)
FROM jobd_jobs
WHERE parent_id = $1 AND state NOT IN ('succeeded', 'failed', 'canceled');
