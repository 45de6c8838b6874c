-- The names of the limited queues, whose claims take claim_limited.sql
-- (see the driver's limitedQueues), and whether each counts its running
-- jobs (a global_limit or a partition_limit: a finish wakes its claimers).
-- The table holds a row per queue with settings: a few.
SELECT name, global_limit IS NOT NULL OR partition_limit IS NOT NULL
FROM jobd_queues
WHERE limited;
