-- A page of a namespace's processes by id (:status '' is any).
SELECT namespace, id, status, detail, aux_state, metadata, timer_at, timer_job, last_event_id, created_at, updated_at
FROM jobd_processes
WHERE namespace = :namespace AND (:status = '' OR status = :status) AND id > :after
ORDER BY id
LIMIT :limit
