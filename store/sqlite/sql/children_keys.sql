-- A parent's children: their keys and ids.
SELECT child_key, id FROM jobd_jobs WHERE parent_id = :id
