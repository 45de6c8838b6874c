-- Takes or extends node $3's term as leader of $2 for $4; $1 now. Another
-- node's unexpired term (expires_at > now) is left alone and the
-- statement returns no row.
INSERT INTO jobd_leaders AS l (name, node, expires_at)
VALUES ($2, $3, coalesce($1::timestamptz, now()) + $4::interval)
ON CONFLICT (name) DO UPDATE
    SET node = excluded.node, expires_at = excluded.expires_at
    WHERE l.node = excluded.node OR l.expires_at <= coalesce($1::timestamptz, now())
RETURNING node;
