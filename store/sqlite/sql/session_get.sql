-- The dashboard session :id unless it has expired at :now, with its API
-- key (NULL columns for the admin secret's session); none when its key
-- was revoked. The key's columns are those of key_by_prefix.sql, in its
-- order.
SELECT s.id, coalesce(s.key_id, ''), s.secret_tag, s.created_at, s.expires_at,
       k.id, k.name, k.prefix, k.hash, k.scopes, k.created_at, coalesce(k.worker_id, ''), k.queues
FROM jobd_dashboard_sessions s
LEFT JOIN jobd_api_keys k ON k.id = s.key_id
WHERE s.id = :id
  AND s.expires_at > :now
  AND (s.key_id IS NULL OR k.id IS NOT NULL)
