-- Deletes a schedule.
DELETE FROM jobd_schedules WHERE name = :name
