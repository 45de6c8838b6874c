-- A page of a namespace's processes by id. $1 namespace, $2 status ('':
-- any), $3 the last id already seen, $4 limit.
SELECT namespace, id, status, detail, aux_state, metadata, timer_at, timer_job::text, last_event_id, created_at, updated_at
FROM jobd_processes
WHERE namespace = $1 AND ($2 = '' OR status = $2) AND id > $3
ORDER BY id
LIMIT $4;
