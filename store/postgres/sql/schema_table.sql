-- Whether the record of applied migrations exists yet.
SELECT to_regclass('jobd_schema_migrations') IS NOT NULL;
