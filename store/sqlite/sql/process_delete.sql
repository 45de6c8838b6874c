-- Deletes a process; returns its timer job (NULL: none), no row when
-- there was no such process. Its history goes with process_events_delete.sql.
DELETE FROM jobd_processes WHERE namespace = :namespace AND id = :id
RETURNING timer_job
