-- Whether migration $1 was applied.
SELECT EXISTS (SELECT 1 FROM jobd_schema_migrations WHERE version = $1);
