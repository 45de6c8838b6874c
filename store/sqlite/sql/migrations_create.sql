-- The record of applied migrations. Created inside each migration's
-- transaction, so the first Migrate on a new file needs nothing else.
CREATE TABLE IF NOT EXISTS jobd_schema_migrations (
    version    INTEGER NOT NULL PRIMARY KEY,
    applied_at INTEGER NOT NULL
) STRICT
