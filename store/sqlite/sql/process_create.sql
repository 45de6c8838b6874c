-- Creates a process (an init task); no row when it exists already.
INSERT INTO jobd_processes (namespace, id, created_at, updated_at)
VALUES (:namespace, :id, :now, :now)
ON CONFLICT (namespace, id) DO NOTHING
RETURNING namespace, id, status, detail, aux_state, metadata, timer_at, timer_job, last_event_id, created_at, updated_at
