-- Deletes workflow :id's tasks (with their journals), found by the
-- workflow index.
DELETE FROM jobd_jobs WHERE workflow_id = :id
