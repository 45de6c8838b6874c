-- Takes the lock that serializes the limited claims of queue $1: its
-- settings row, FOR UPDATE, held until the transaction ends. The claim
-- that follows (claim_limited.sql), a statement of its own, takes its
-- snapshot once the lock is held: under READ COMMITTED it then sees every
-- claim the previous holder committed. Under another isolation level its
-- snapshot could be older than the lock: the lock is then not taken.
--
-- Returns the transaction's isolation level, whether the queue is still
-- limited when the lock was taken (NULL when it was not: no row, another
-- isolation level, or, in the SKIP LOCKED variant a claim inside a
-- caller's transaction may use, another claim holds it), and whether it
-- counts its running jobs (a global_limit or a partition_limit: see the
-- driver's limitedQueues; NULL likewise). A lock taken
-- sets jobd.flow_lock, local to the transaction (and undone with a
-- savepoint rolled back to), to the queue's name: the claim claims nothing
-- unless it names its queue.
WITH locked AS MATERIALIZED (
    SELECT name, limited, global_limit IS NOT NULL OR partition_limit IS NOT NULL AS counted
    FROM jobd_queues
    WHERE name = $1
      AND current_setting('transaction_isolation') = 'read committed'
    FOR UPDATE
)
SELECT current_setting('transaction_isolation'),
       (SELECT limited FROM locked WHERE set_config('jobd.flow_lock', name, true) IS NOT NULL),
       (SELECT counted FROM locked);
