-- Whether node $2's presence in leader election $1 (leader_presence.sql)
-- is held by a connection: true when the lock cannot be had at once. A
-- lock it could have is given back in the same statement (CASE fixes
-- the order).
SELECT CASE WHEN pg_try_advisory_lock(hashtext('jobd_leaders:' || $1), hashtext($2))
            THEN NOT pg_advisory_unlock(hashtext('jobd_leaders:' || $1), hashtext($2))
            ELSE true END;
