-- Puts back the settings planner_ordered.sql changed, inside a
-- transaction of the caller's that goes on after the statement: each
-- takes its session value again, until the transaction ends.
SELECT set_config(name, reset_val, true)
FROM pg_settings
WHERE name IN ('enable_bitmapscan', 'enable_seqscan', 'enable_sort', 'jit');
