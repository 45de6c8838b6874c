-- Gives back the lock of node $2's presence in leader election $1, taken
-- by leader_presence.sql.
SELECT pg_advisory_unlock(hashtext('jobd_leaders:' || $1), hashtext($2));
