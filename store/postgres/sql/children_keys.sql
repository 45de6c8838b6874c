-- A parent's ($1) children: their keys and ids.
SELECT child_key, id FROM jobd_jobs WHERE parent_id = $1;
