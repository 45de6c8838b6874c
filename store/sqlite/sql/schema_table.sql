-- Whether the record of applied migrations exists yet.
SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'jobd_schema_migrations'
