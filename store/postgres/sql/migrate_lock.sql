-- Serialises migrations across nodes for the rest of the transaction.
-- $1 the lock key.
SELECT pg_advisory_xact_lock($1);
