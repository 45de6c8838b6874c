-- Makes node $3 the leader of $2 for $5 from $1 (now), in place of node
-- $4, whose presence ended (its connection died: LeaderWatch holds $4's
-- presence lock as it runs this). No row when $4 holds the term no more
-- (it resigned, or another node took the term first).
UPDATE jobd_leaders SET node = $3, expires_at = coalesce($1::timestamptz, now()) + $5::interval
WHERE name = $2 AND node = $4
RETURNING node;
