-- The workflow step's read (store.DecidePropagate): locks, in id order,
-- the tasks that the end of tasks $1 may change, and returns their facts
-- with, for each, the tasks of the walk it depends on ($2 says, for each
-- task of $1, whether it ends failed or canceled). Those are every
-- direct dependent of a task of $1, and every dependent, transitively,
-- of one that ends failed or canceled, through the tasks that run on
-- success (which the dependency rule may cancel in turn): run_on never
-- changes and the edges are written once, so the walk needs no lock. The
-- locks are taken in id order, after the ended tasks' own and before
-- their workflows' (workflow_lock.sql), as every transaction that
-- changes tasks takes them, so that none waits for another in a cycle.
-- FOR UPDATE reads the latest committed version of each row: a
-- concurrent end of another dependency of one of them, committed while
-- this waited, is in the facts read here.
--
-- Each row is found by a probe of the primary key (= ANY (ARRAY[...]),
-- see claim.sql), the edges by their indexes, whatever the statistics.
WITH RECURSIVE reach(parent, child, deep) AS (
    SELECT e.depends_on, e.job_id, f.failing
    FROM unnest($1::uuid[], $2::boolean[]) AS f(id, failing)
    JOIN jobd_workflow_edges e ON e.depends_on = f.id
  UNION
    SELECT e.depends_on, e.job_id, true
    FROM reach r
    JOIN jobd_jobs c ON c.id = ANY (ARRAY[r.child])
    JOIN jobd_workflow_edges e ON e.depends_on = r.child
    WHERE r.deep AND c.run_on = 'success'
),
nodes AS (
    SELECT child, array_agg(DISTINCT parent) AS parents FROM reach GROUP BY child
)
SELECT j.id, j.workflow_id, j.workflow_ref, j.queue, j.run_on, coalesce(j.pending, 0), j.run_at,
       j.canceled_by, j.state, j.attempt, j.max_attempts, j.cancel_requested,
       coalesce(j.lease_owner, ''), j.attempted_at, j.finished_at, j.rerun, j.timeout,
       coalesce(j.wait_for, ''), n.parents
FROM nodes n
JOIN jobd_jobs j ON j.id = ANY (ARRAY[n.child])
ORDER BY n.child -- j.id, in an order the primary key's walk cannot offer (see lock_held.sql)
FOR UPDATE OF j;
