SELECT count(*) FROM jobd_schema_migrations WHERE version = ?
