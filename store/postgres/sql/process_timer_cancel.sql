-- Cancels a process's replaced timer job if it is still queued. $1 now,
-- $2 job id. A timer job that already runs is the task doing the
-- replacing (the process's lock_key lets no other run), so it is left to
-- finish.
WITH canceled AS (
    UPDATE jobd_jobs SET
        state = 'canceled',
        finished_at = coalesce($1::timestamptz, now()),
        updated_at = coalesce($1::timestamptz, now())
    WHERE id = $2 AND state = 'queued'
    RETURNING id, updated_at, attempt
)
INSERT INTO jobd_job_events (job_id, at, kind, attempt)
SELECT id, updated_at, 'canceled', attempt FROM canceled;
