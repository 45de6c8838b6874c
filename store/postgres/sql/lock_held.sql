-- Locks the jobs whose leases a batch of outcomes names (an attempt past
-- its deadline holds none), for JobFinish to decide their transitions in
-- Go (job.Finish) and apply them in the same transaction
-- (set_state_if_running.sql). $1 now; $2 job ids and $3 lease
-- tokens, one element per outcome. Only the rows still held (state
-- running, token current) are locked and returned, in id order (o.id,
-- which is j.id, but an order the primary key's walk cannot offer) so that
-- two batches lock in one order: a concurrent JobCancel's request, once
-- committed, is in the facts read here, and none can commit after them.
-- The facts include the lease owner and attempted_at, from which the
-- decision stores the claim the row implied, and the workflow and ref of
-- a task (NULL and '' for a job outside any workflow), whose end the
-- workflow step follows in the same transaction. The last column is the
-- transaction's time, which the decision uses.
--
-- j.id = ANY (ARRAY[o.id]): a probe of the primary key per job whatever
-- the table's statistics, never a walk of it (see claim.sql;
-- TestPlansAreStable).
SELECT j.id, j.lease_token, j.queue, j.attempt, j.max_attempts, j.cancel_requested,
       coalesce(j.lease_owner, ''), j.attempted_at, j.workflow_id, coalesce(j.workflow_ref, ''), j.parent_id,
       coalesce($1::timestamptz, now())
FROM unnest($2::uuid[], $3::uuid[]) AS o(id, token)
JOIN jobd_jobs j ON j.id = ANY (ARRAY[o.id])
WHERE j.state = 'running'
  AND j.lease_token = o.token
  AND (j.deadline IS NULL OR j.deadline > coalesce($1::timestamptz, now()))
ORDER BY o.id
FOR UPDATE OF j;
