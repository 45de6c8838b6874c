-- Revokes every API key of a worker.
DELETE FROM jobd_api_keys WHERE worker_id = ?
