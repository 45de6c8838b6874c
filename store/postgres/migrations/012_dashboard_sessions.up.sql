-- 012: the dashboard's login sessions, shared by every node (package web).

-- id is the SHA-256 of the token the session's cookie holds: the token
-- itself is never stored. A session is the admin secret's (key_id NULL,
-- secret_tag set: the dashboard's HMAC of the token under a key derived
-- from the secret, so that a node with another secret refuses it) or an
-- API key's (key_id set, no tag). No foreign key to jobd_api_keys: the
-- lookup joins the key, so a revoked key's sessions are never found, and
-- expired rows go at the next login.
CREATE TABLE jobd_dashboard_sessions (
    id          bytea       PRIMARY KEY,
    key_id      text,
    secret_tag  bytea,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    CHECK ((key_id IS NULL) = (secret_tag IS NOT NULL))
);

CREATE INDEX jobd_dashboard_sessions_expires ON jobd_dashboard_sessions (expires_at);
