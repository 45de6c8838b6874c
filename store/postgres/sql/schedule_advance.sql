-- Records a pass of the ticker or a trigger, fenced by the next_run_at
-- the caller read. $1 now (NULL: the database's now()), $2 name, $3 the
-- next_run_at read (NULL: no fence), $4 the new next_run_at (NULL:
-- kept), $5 the last job (NULL: kept) and $6 its tick, last_run_at.
-- Returns the name when the fence held.
UPDATE jobd_schedules SET
    next_run_at = coalesce($4::timestamptz, next_run_at),
    last_job_id = coalesce($5::uuid, last_job_id),
    last_run_at = CASE WHEN $5::uuid IS NULL THEN last_run_at ELSE $6::timestamptz END,
    updated_at = coalesce($1::timestamptz, now())
WHERE name = $2
  AND ($3::timestamptz IS NULL OR next_run_at = $3::timestamptz)
RETURNING name;
