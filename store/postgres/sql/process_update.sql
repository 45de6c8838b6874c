-- Saves a task's changes to a process locked by process_lock.sql.
-- $1 now, $2 namespace, $3 id, $4 status, $5 detail, $6 aux_state and
-- $7 metadata (NULL: unchanged), $8 events appended, $9 timer_at and
-- $10 timer_job (both NULL: no timer).
UPDATE jobd_processes SET
    status = $4,
    detail = $5,
    aux_state = coalesce($6::jsonb, aux_state),
    metadata = coalesce($7::jsonb, metadata),
    last_event_id = last_event_id + $8,
    timer_at = $9,
    timer_job = $10,
    updated_at = coalesce($1::timestamptz, now())
WHERE namespace = $2 AND id = $3
RETURNING namespace, id, status, detail, aux_state, metadata, timer_at, timer_job::text, last_event_id, created_at, updated_at;
