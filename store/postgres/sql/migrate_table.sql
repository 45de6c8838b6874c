-- The record of applied migrations. Created under the migration lock, so
-- two nodes never race to create it.
CREATE TABLE IF NOT EXISTS jobd_schema_migrations (
    version    integer PRIMARY KEY,
    applied_at timestamptz NOT NULL
);
