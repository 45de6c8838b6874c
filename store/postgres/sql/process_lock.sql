-- One process, locked for a task's changes. $1 namespace, $2 id.
SELECT namespace, id, status, detail, aux_state, metadata, timer_at, timer_job::text, last_event_id, created_at, updated_at
FROM jobd_processes
WHERE namespace = $1 AND id = $2
FOR UPDATE;
