-- A parent's children that are not final, in id order: what its cancel
-- cancels.
SELECT id FROM jobd_jobs
WHERE parent_id = :id AND state NOT IN ('succeeded', 'failed', 'canceled')
ORDER BY id
