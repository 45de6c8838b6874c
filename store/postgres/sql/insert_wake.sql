-- Wakes, once an insert has committed, the queues that got a job they
-- can run now, on every node (see Listen), in a transaction of its own
-- (rounds.thenAfterCommit). $1 the queues, $2 the earliest run_at each
-- was given (NULL: now), $3 now (NULL: the database's now()). A queue
-- whose jobs were all duplicates is woken too, to no harm.
SELECT count(pg_notify('jobd_wake', w.queue))
FROM unnest($1::text[], $2::timestamptz[]) AS w(queue, run_at)
WHERE w.run_at IS NULL OR w.run_at <= coalesce($3::timestamptz, now());
