-- The node whose term as leader of $2 runs at $1 (now); no row when none
-- does.
SELECT node FROM jobd_leaders WHERE name = $2 AND expires_at > coalesce($1::timestamptz, now());
