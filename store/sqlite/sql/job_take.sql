-- Deletes job :id, with its journal, when it is finished. The caller read
-- the job first, in the same write transaction, to return it and to tell
-- "not final" from "no such job".
DELETE FROM jobd_jobs
WHERE id = :id AND state IN ('succeeded', 'failed', 'canceled')
