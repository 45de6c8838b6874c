-- The highest migration applied (run once schema_table.sql found the
-- record table).
SELECT coalesce(max(version), 0) FROM jobd_schema_migrations;
