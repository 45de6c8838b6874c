-- Makes a job just inserted (JobSpawn) the child :key of :parent; a
-- child of a workflow task (:workflow not NULL) becomes a task of that
-- workflow, ref :ref, without dependencies, run on success.
UPDATE jobd_jobs
SET parent_id = :parent,
    child_key = :key,
    workflow_id = :workflow,
    workflow_ref = CASE WHEN :workflow IS NULL THEN NULL ELSE :ref END,
    run_on = CASE WHEN :workflow IS NULL THEN NULL ELSE 'success' END,
    dependencies = CASE WHEN :workflow IS NULL THEN NULL ELSE 0 END
WHERE id = :id AND parent_id IS NULL
