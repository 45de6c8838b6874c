-- The names of the limited queues, whose claims take claim_limited.sql
-- (see the driver's limitedQueues). The table holds a row per queue
-- with settings: a few.
SELECT name FROM jobd_queues WHERE limited;
