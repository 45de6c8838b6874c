-- Every API key record, oldest first.
SELECT id, name, prefix, hash, scopes, created_at, coalesce(worker_id, ''), queues
FROM jobd_api_keys
ORDER BY created_at, id;
