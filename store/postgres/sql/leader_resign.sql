-- Ends node $2's term as leader of $1, if it holds it.
DELETE FROM jobd_leaders WHERE name = $1 AND node = $2;
