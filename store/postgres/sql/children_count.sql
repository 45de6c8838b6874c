-- How many children of each parent of $1 are not final: a statement of
-- its own, after parents_lock.sql (or lock_held.sql for a wait), whose
-- snapshot therefore sees every end committed before the lock was
-- granted.
SELECT p.id, (SELECT count(*) FROM jobd_jobs c
              WHERE c.parent_id = p.id AND c.state NOT IN ('succeeded', 'failed', 'canceled'))
FROM unnest($1::uuid[]) AS p(id);
