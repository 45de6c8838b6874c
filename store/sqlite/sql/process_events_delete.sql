-- Deletes a process's history.
DELETE FROM jobd_process_events WHERE namespace = :namespace AND process_id = :id
