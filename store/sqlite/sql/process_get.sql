-- One process, without its history.
SELECT namespace, id, status, detail, aux_state, metadata, timer_at, timer_job, last_event_id, created_at, updated_at
FROM jobd_processes
WHERE namespace = :namespace AND id = :id
