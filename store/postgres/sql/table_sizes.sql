-- The size of the hot table (heap and TOAST, the journal included) and of
-- its indexes, in bytes.
SELECT c.relname,
       pg_table_size(c.oid),
       pg_indexes_size(c.oid)
FROM pg_class c
WHERE c.relname = 'jobd_jobs'
  AND c.relnamespace = current_schema()::regnamespace
ORDER BY c.relname;
