-- The planner settings of a statement whose plan must walk an index in
-- order whatever the table's statistics say (the claim): without them, a
-- table that VACUUM left with reltuples = 0 while it holds rows makes a
-- bitmap scan and a sort of the whole queue look cheapest, and each claim
-- then reads and sorts every queued job. They are disabled, not forbidden:
-- a plan that has no other way still sorts. A disabled path adds a huge
-- cost to a plan that still takes it, which would make the claim look
-- worth compiling with JIT (seconds per claim): JIT goes too. Local to the
-- transaction.
SELECT set_config('enable_bitmapscan', 'off', true),
       set_config('enable_seqscan', 'off', true),
       set_config('enable_sort', 'off', true),
       set_config('jit', 'off', true);
