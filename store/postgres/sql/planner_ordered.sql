-- The planner settings of a statement whose plan must walk an index in
-- order whatever the table's statistics say (the claim): without them, a
-- table that VACUUM left with reltuples = 0 while it holds rows makes a
-- bitmap scan and a sort of the whole queue look cheapest, and each claim
-- then reads and sorts every queued job. They are disabled, not forbidden:
-- a plan that has no other way still sorts. A disabled path adds a huge
-- cost to a plan that still takes it, which would make the claim look
-- worth compiling with JIT (seconds per claim): JIT goes too. Local to the
-- transaction.
--
-- The statements that find jobs by id (batched finishes and heartbeats,
-- the locks a decision reads under, the writes that apply it) run under
-- them too: on such a table every index scan costs one page, and a
-- sequential scan of the whole table, rescanning the batch for each row,
-- looked cheaper than a thousand probes of the primary key.
SELECT set_config('enable_bitmapscan', 'off', true),
       set_config('enable_seqscan', 'off', true),
       set_config('enable_sort', 'off', true),
       set_config('jit', 'off', true);
