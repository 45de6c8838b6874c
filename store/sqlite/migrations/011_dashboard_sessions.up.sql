-- 011: the dashboard's login sessions. (The PostgreSQL migration 012 says
-- why each is so.) Times are unix microseconds.

CREATE TABLE jobd_dashboard_sessions (
    id          BLOB    NOT NULL PRIMARY KEY,
    key_id      TEXT,
    secret_tag  BLOB,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    CHECK ((key_id IS NULL) = (secret_tag IS NOT NULL))
) STRICT;

CREATE INDEX jobd_dashboard_sessions_expires ON jobd_dashboard_sessions (expires_at);
