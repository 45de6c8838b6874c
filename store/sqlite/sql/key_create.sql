INSERT INTO jobd_api_keys (id, name, prefix, hash, scopes, created_at, worker_id)
VALUES (:id, :name, :prefix, :hash, :scopes, :created_at, nullif(:worker_id, ''))
