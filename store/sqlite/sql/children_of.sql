-- A parent's children, by key, with how they stand.
SELECT child_key, id, state, result, last_error
FROM jobd_jobs
WHERE parent_id = :id
ORDER BY child_key
