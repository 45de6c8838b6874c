INSERT INTO jobd_api_keys (id, name, prefix, hash, scopes, created_at)
VALUES (:id, :name, :prefix, :hash, :scopes, :created_at)
