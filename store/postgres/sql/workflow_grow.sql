-- Counts $2 more tasks in workflow $1 (the children a task spawned), at
-- $3: its row locked after the parent's, as every transaction locks a
-- workflow after its tasks.
UPDATE jobd_workflows SET tasks = tasks + $2, updated_at = coalesce($3::timestamptz, now()) WHERE id = $1;
