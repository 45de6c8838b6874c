-- Locks tasks $1 (ids) in id order, for a retry of them
-- (store.DecideRetry), before it reads their facts again
-- (workflow_plan.sql) and locks their workflow (workflow_lock.sql).
-- Each is found by a probe of the primary key; the order is t.id's
-- (which is j.id, but an order the primary key's walk cannot offer: see
-- lock_held.sql).
SELECT j.id
FROM unnest($1::uuid[]) AS t(id)
JOIN jobd_jobs j ON j.id = ANY (ARRAY[t.id])
ORDER BY t.id
FOR UPDATE OF j;
