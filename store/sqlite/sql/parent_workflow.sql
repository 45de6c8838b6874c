-- The workflow and ref of a parent ('' for none).
SELECT coalesce(workflow_id, ''), coalesce(workflow_ref, '') FROM jobd_jobs WHERE id = :id
