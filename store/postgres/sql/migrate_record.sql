-- Records migration $1 as applied.
INSERT INTO jobd_schema_migrations (version, applied_at) VALUES ($1, now());
