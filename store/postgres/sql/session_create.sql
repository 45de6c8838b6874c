-- Stores a dashboard session, created at $1 (NULL: the database's now())
-- and expiring $5 later, and deletes the sessions expired by then, in one
-- statement. $2 id, $3 key_id (NULL for the admin secret's), $4 the
-- secret tag (NULL for a key's).
WITH clock AS (
    SELECT coalesce($1::timestamptz, now()) AS now
),
expired AS (
    DELETE FROM jobd_dashboard_sessions
    WHERE expires_at <= (SELECT now FROM clock)
)
INSERT INTO jobd_dashboard_sessions (id, key_id, secret_tag, created_at, expires_at)
SELECT $2, $3, $4, now, now + $5::interval
FROM clock
RETURNING created_at, expires_at;
