INSERT INTO jobd_api_keys (id, name, prefix, hash, scopes, created_at, worker_id, queues)
VALUES (:id, :name, :prefix, :hash, :scopes, :created_at, nullif(:worker_id, ''), :queues)
