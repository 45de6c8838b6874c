SELECT id, name, prefix, hash, scopes, created_at
FROM jobd_api_keys
WHERE prefix = ?
