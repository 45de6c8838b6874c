-- The workflow and ref of a parent ($1): NULL and '' for none.
SELECT workflow_id, coalesce(workflow_ref, '') FROM jobd_jobs WHERE id = $1;
