-- jobd's tables in the store's schema, for Vacuum.
SELECT c.relname
FROM pg_class c
WHERE c.relkind = 'r'
  AND c.relname LIKE 'jobd\_%'
  AND c.relnamespace = current_schema()::regnamespace
ORDER BY c.relname;
