-- How many of a parent's children are not final.
SELECT count(*)
FROM jobd_jobs
WHERE parent_id = :id AND state NOT IN ('succeeded', 'failed', 'canceled')
