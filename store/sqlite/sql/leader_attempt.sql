-- Takes the term of :name for :node when nobody holds it, when it has
-- expired (expires_at <= now), or when :node holds it already (then
-- extends it). A row comes
-- back only when :node leads.
INSERT INTO jobd_leaders (name, node, expires_at)
VALUES (:name, :node, :expires_at)
ON CONFLICT (name) DO UPDATE
SET node = excluded.node, expires_at = excluded.expires_at
WHERE jobd_leaders.node = excluded.node OR jobd_leaders.expires_at <= :now
RETURNING node
