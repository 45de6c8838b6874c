-- The highest migration applied; 0 before the first (no record table yet).
SELECT coalesce(max(version), 0) FROM jobd_schema_migrations
