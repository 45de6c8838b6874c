-- Deletes a process and its history. $1 namespace, $2 id. Returns its
-- timer job (NULL: none); no row when there was no such process.
WITH gone AS (
    DELETE FROM jobd_processes WHERE namespace = $1 AND id = $2
    RETURNING timer_job
),
history AS (
    DELETE FROM jobd_process_events WHERE namespace = $1 AND process_id = $2
)
SELECT timer_job::text FROM gone;
