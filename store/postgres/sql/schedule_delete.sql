-- Deletes a schedule. $1 name. Returns it when there was one.
DELETE FROM jobd_schedules WHERE name = $1 RETURNING name;
