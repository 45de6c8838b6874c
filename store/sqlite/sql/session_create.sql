-- Stores a dashboard session; :key_id is NULL for the admin secret's,
-- :secret_tag NULL for a key's.
INSERT INTO jobd_dashboard_sessions (id, key_id, secret_tag, created_at, expires_at)
VALUES (:id, :key_id, :secret_tag, :created_at, :expires_at)
