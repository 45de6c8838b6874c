-- Makes a job just inserted (JobSpawn) the child :key of :parent.
UPDATE jobd_jobs SET parent_id = :parent, child_key = :key WHERE id = :id AND parent_id IS NULL
