-- Saves a task's changes. A NULL aux_state or metadata leaves it as it
-- is; :events is how many events were appended.
UPDATE jobd_processes SET
    status = :status,
    detail = :detail,
    aux_state = coalesce(:aux_state, aux_state),
    metadata = coalesce(:metadata, metadata),
    last_event_id = last_event_id + :events,
    timer_at = :timer_at,
    timer_job = :timer_job,
    updated_at = :now
WHERE namespace = :namespace AND id = :id
RETURNING namespace, id, status, detail, aux_state, metadata, timer_at, timer_job, last_event_id, created_at, updated_at
