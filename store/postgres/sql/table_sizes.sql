-- The size of each hot table (heap and TOAST) and of its indexes, in bytes.
SELECT c.relname,
       pg_table_size(c.oid),
       pg_indexes_size(c.oid)
FROM pg_class c
WHERE c.relname IN ('jobd_jobs', 'jobd_job_events')
  AND c.relnamespace = current_schema()::regnamespace
ORDER BY c.relname;
