-- Locks, in id order, the children of $1 that are not final, before
-- their parent's cancel locks the parent: a child's end locks the child
-- first and its parent after it, and so does this, so the two never wait
-- for each other in a cycle. Returns their ids.
SELECT id FROM jobd_jobs
WHERE parent_id = $1 AND state IN ('waiting', 'queued', 'running')
ORDER BY id
FOR UPDATE;
