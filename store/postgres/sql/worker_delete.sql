-- Deletes worker $1 and its API keys, in one statement.
WITH keys AS (
    DELETE FROM jobd_api_keys WHERE worker_id = $1
)
DELETE FROM jobd_workers WHERE id = $1;
