-- Makes the jobs just inserted (JobSpawn, $2 ids) the children of $1,
-- under the keys $3.
UPDATE jobd_jobs j SET parent_id = $1, child_key = c.key
FROM unnest($2::uuid[], $3::text[]) AS c(id, key)
WHERE j.id = ANY (ARRAY[c.id]) AND j.parent_id IS NULL;
