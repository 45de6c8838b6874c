-- 008: flow control (package flow). (The PostgreSQL migration 009 says
-- why each is so.) rate_period_us is the rate's period in microseconds;
-- rate_tat and throttled_until are unix microseconds. limited is VIRTUAL:
-- SQLite adds no STORED column to a table that exists.
ALTER TABLE jobd_queues ADD COLUMN global_limit INTEGER CHECK (global_limit > 0);
ALTER TABLE jobd_queues ADD COLUMN partition_limit INTEGER CHECK (partition_limit > 0);
ALTER TABLE jobd_queues ADD COLUMN rate_limit INTEGER CHECK (rate_limit > 0);
ALTER TABLE jobd_queues ADD COLUMN rate_period_us INTEGER CHECK (rate_period_us > 0);
ALTER TABLE jobd_queues ADD COLUMN rate_by TEXT CHECK (rate_by = 'partition_key');
ALTER TABLE jobd_queues ADD COLUMN rate_burst INTEGER CHECK (rate_burst > 0);
ALTER TABLE jobd_queues ADD COLUMN throttle_by TEXT CHECK (throttle_by = 'partition_key');
ALTER TABLE jobd_queues ADD COLUMN rate_tat INTEGER;
ALTER TABLE jobd_queues ADD COLUMN throttled_until INTEGER;
ALTER TABLE jobd_queues ADD COLUMN limited INTEGER GENERATED ALWAYS AS (
    global_limit IS NOT NULL OR partition_limit IS NOT NULL
    OR rate_limit IS NOT NULL OR throttle_by IS NOT NULL) VIRTUAL;

-- The rate state and throttle of one partition_key of a queue ('' for the
-- jobs without one). A row whose rate_tat and throttled_until have both
-- passed says nothing: JobPrune deletes it.
CREATE TABLE jobd_queue_partitions (
    queue           TEXT    NOT NULL,
    partition_key   TEXT    NOT NULL,
    rate_tat        INTEGER,
    throttled_until INTEGER,
    PRIMARY KEY (queue, partition_key)
) STRICT, WITHOUT ROWID;
