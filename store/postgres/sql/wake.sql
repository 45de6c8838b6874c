-- Wakes the workers of queues $1 on every node (see Listen).
SELECT count(pg_notify('jobd_wake', queue)) FROM unnest($1::text[]) AS queue;
