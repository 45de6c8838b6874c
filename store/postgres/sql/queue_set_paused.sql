-- Pauses or resumes a queue, creating its settings row. $1 now, $2 queue,
-- $3 paused. A resumed queue's workers are woken: jobs may be waiting.
WITH saved AS (
    INSERT INTO jobd_queues AS q (name, paused, created_at, updated_at)
    VALUES ($2, $3, coalesce($1::timestamptz, now()), coalesce($1::timestamptz, now()))
    ON CONFLICT (name) DO UPDATE
        SET paused = excluded.paused, updated_at = excluded.updated_at
    RETURNING q.name, q.paused
)
SELECT count(pg_notify('jobd_wake', name)) FROM saved WHERE NOT paused;
