-- A parent's children that are not final, in the order of their keys
-- (the index's: one writer at a time, no order of locks to keep): what
-- its cancel cancels.
SELECT id FROM jobd_jobs
WHERE parent_id = :id AND state NOT IN ('succeeded', 'failed', 'canceled')
ORDER BY child_key
