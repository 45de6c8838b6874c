INSERT INTO jobd_schema_migrations (version, applied_at) VALUES (?, ?)
