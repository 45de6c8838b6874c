-- Creates a process (an init task). $1 now, $2 namespace, $3 id.
-- No row when it exists already.
INSERT INTO jobd_processes (namespace, id, created_at, updated_at)
VALUES ($2, $3, coalesce($1::timestamptz, now()), coalesce($1::timestamptz, now()))
ON CONFLICT (namespace, id) DO NOTHING
RETURNING namespace, id, status, detail, aux_state, metadata, timer_at, timer_job::text, last_event_id, created_at, updated_at;
