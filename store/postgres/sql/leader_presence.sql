-- Takes the session advisory lock of node $2's presence in leader
-- election $1 (LeaderWatch's dedicated connection holds its own node's
-- for as long as it lives, and takes the leader's to learn that it
-- died), waiting for it up to the session's lock_timeout. PostgreSQL
-- frees a session lock when its connection ends, however the node died.
SELECT pg_advisory_lock(hashtext('jobd_leaders:' || $1), hashtext($2));
