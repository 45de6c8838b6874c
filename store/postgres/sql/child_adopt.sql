-- Makes the jobs just inserted (JobSpawn, $2 ids) the children of $1,
-- under the keys $3; a child of a workflow task ($4 its workflow, not
-- NULL) becomes a task of that workflow, ref $5 of each, without
-- dependencies, run on success.
UPDATE jobd_jobs j SET
    parent_id = $1,
    child_key = c.key,
    workflow_id = $4::uuid,
    workflow_ref = CASE WHEN $4::uuid IS NULL THEN NULL ELSE c.ref END,
    run_on = CASE WHEN $4::uuid IS NULL THEN NULL ELSE 'success' END,
    dependencies = CASE WHEN $4::uuid IS NULL THEN NULL ELSE 0 END
FROM unnest($2::uuid[], $3::text[], $5::text[]) AS c(id, key, ref)
WHERE j.id = ANY (ARRAY[c.id]) AND j.parent_id IS NULL;
