-- 004: the feed's index keys updated_at alone. With (updated_at, id), a
-- lookup of a row by id could be planned as a walk of that whole index
-- (id is one of its columns) whenever the statistics said the table was
-- empty, as they do after VACUUM of a drained queue: one full index scan
-- per job claimed or finished, and throughput fell ninefold. Now the
-- primary key is the only index that holds id as a key column a lookup
-- can use. Feed pages still read in (updated_at, id) order (the pruner in
-- updated_at order alone): ties on updated_at are few, and sorted as the
-- index yields them.
DROP INDEX jobd_jobs_updated;
CREATE INDEX jobd_jobs_updated ON jobd_jobs (updated_at);
