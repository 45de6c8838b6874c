-- Deletes job :id when it is finished, returning its id so that the
-- caller deletes its events with it. The caller read the job first, in
-- the same write transaction, to return it and to tell "not final" from
-- "no such job".
DELETE FROM jobd_jobs
WHERE id = :id AND state IN ('succeeded', 'failed', 'canceled')
RETURNING id
