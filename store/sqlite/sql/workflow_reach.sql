-- The workflow step's read (store.DecidePropagate), inside the write
-- transaction, which holds the file's write lock: the tasks that the end
-- of the tasks of :ends may change, with their facts, one row per edge
-- of the walk into each (its last column: the task it depends on; the
-- driver gathers a task's rows). :ends is a JSON array
-- of {"id", "failing"}, failing 1 for a task that ends failed or
-- canceled. Those are every direct dependent of an ended task, and every
-- dependent, transitively, of one that ends failed or canceled, through
-- the tasks that run on success (which the dependency rule may cancel in
-- turn). CROSS JOIN keeps the walk the outer loop: each edge is found by
-- its index, each task by its primary key; nothing is sorted.
WITH RECURSIVE reach(parent, child, deep) AS (
    SELECT e.depends_on, e.job_id, f.value ->> 'failing'
    FROM json_each(:ends) AS f
    CROSS JOIN jobd_workflow_edges AS e
    WHERE e.depends_on = f.value ->> 'id'
  UNION
    SELECT e.depends_on, e.job_id, 1
    FROM reach AS r
    CROSS JOIN jobd_jobs AS c
    CROSS JOIN jobd_workflow_edges AS e
    WHERE r.deep = 1 AND c.id = r.child AND c.run_on = 'success' AND e.depends_on = r.child
  )
SELECT j.id, j.workflow_id, j.workflow_ref, j.queue, j.run_on, coalesce(j.pending, 0), j.run_at,
       j.canceled_by, j.state, j.attempt, j.max_attempts, j.cancel_requested,
       coalesce(j.lease_owner, ''), j.attempted_at, j.finished_at, j.rerun, j.timeout_us,
       coalesce(j.wait_for, ''), r.parent
FROM reach AS r
CROSS JOIN jobd_jobs AS j
WHERE j.id = r.child
