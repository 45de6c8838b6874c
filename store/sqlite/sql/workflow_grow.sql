-- Counts :n more tasks in workflow :id: the children a task spawned.
UPDATE jobd_workflows SET tasks = tasks + :n, updated_at = :now WHERE id = :id
