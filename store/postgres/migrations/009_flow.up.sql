-- 009: flow control (package flow). A queue's limits and its throttle live
-- on its settings row; the state of a rate or a throttle kept per
-- partition_key, in a small table of its own.

-- The limits (NULL for none; see flow.Limits, whose Check the driver runs
-- first), the rate's state (GCRA's theoretical arrival time of the next
-- start, for a rate of the whole queue) and the throttle of the whole
-- queue. limited is what the claim's probe reads: a queue whose claims
-- must count what runs, serialized per queue (flow.Limits.Limited).
ALTER TABLE jobd_queues
    ADD COLUMN global_limit    integer CHECK (global_limit > 0),
    ADD COLUMN partition_limit integer CHECK (partition_limit > 0),
    ADD COLUMN rate_limit      integer CHECK (rate_limit > 0),
    ADD COLUMN rate_period     interval CHECK (rate_period > '0'),
    ADD COLUMN rate_by         text CHECK (rate_by = 'partition_key'),
    ADD COLUMN rate_burst      integer CHECK (rate_burst > 0),
    ADD COLUMN throttle_by     text CHECK (throttle_by = 'partition_key'),
    ADD COLUMN rate_tat        timestamptz,
    ADD COLUMN throttled_until timestamptz,
    ADD COLUMN limited boolean NOT NULL GENERATED ALWAYS AS (
        global_limit IS NOT NULL OR partition_limit IS NOT NULL
        OR rate_limit IS NOT NULL OR throttle_by IS NOT NULL) STORED,
    ADD CONSTRAINT jobd_queues_rate CHECK (
        (rate_limit IS NULL) = (rate_period IS NULL)
        AND (rate_limit IS NOT NULL OR (rate_by IS NULL AND rate_burst IS NULL)));

-- A limited queue's claim with a rate rewrites its row (rate_tat) at each
-- claim, and a throttle at each throttled outcome: a few hot rows, kept
-- HOT (no indexed column changes) in the free room of their page, and
-- vacuumed early.
ALTER TABLE jobd_queues SET (
    fillfactor = 50,
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_analyze_scale_factor = 0.02,
    autovacuum_vacuum_cost_delay = 0
);

-- The rate state and the throttle of one partition_key of a queue ('' for
-- the jobs without one), for a rate by partition_key and a throttle_by of
-- partition_key. A row whose rate_tat and throttled_until have both passed
-- says nothing (a rate whose theoretical arrival time has passed starts
-- from now): the prune duty deletes it (JobPrune), and a claim ignores it.
CREATE TABLE jobd_queue_partitions (
    queue           text NOT NULL,
    partition_key   text NOT NULL,
    rate_tat        timestamptz,
    throttled_until timestamptz,
    PRIMARY KEY (queue, partition_key)
) WITH (
    fillfactor = 80,
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_analyze_scale_factor = 0.02,
    autovacuum_vacuum_cost_delay = 0,
    vacuum_truncate = false
);

-- The earliest a rate's theoretical arrival time counts from at now:
-- half an interval back, at least 10 ms (flow.Rate.Slack, flow.MinSlack),
-- in whole microseconds, so that a start that comes a little late keeps
-- its place in the schedule (flow.Allowance).
CREATE FUNCTION jobd_rate_floor(interval_ns bigint, now timestamptz)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT now - greatest(interval_ns / 2000, 10000) * interval '1 microsecond'
$$;

-- How many starts a rate whose starts are interval_ns nanoseconds apart
-- (flow.Rate.Interval), of which bursts may happen at once
-- (flow.Rate.Bursts), allows at now given its theoretical arrival time
-- tat (NULL: never started): flow.Allowance's arithmetic, in nanoseconds
-- as there, for as many starts as wanted. TestRateArithmetic compares
-- them. flow.Rate.Check bounds bursts * interval_ns by the period (a week
-- at most), far inside a bigint.
CREATE FUNCTION jobd_rate_room(interval_ns bigint, bursts integer, tat timestamptz, now timestamptz)
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN room < interval_ns THEN 0 ELSE room / interval_ns END
    FROM (SELECT bursts * interval_ns
                 - (extract(epoch FROM greatest(tat, jobd_rate_floor(interval_ns, now)) - now)
                    * 1000000000)::bigint AS room) r
$$;

-- The theoretical arrival time after n starts allowed by jobd_rate_room:
-- n intervals after tat, or after jobd_rate_floor when tat is before it, rounded up to
-- the microsecond a timestamptz keeps (never earlier than the rate says).
CREATE FUNCTION jobd_rate_next(interval_ns bigint, tat timestamptz, now timestamptz, n bigint)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT greatest(tat, jobd_rate_floor(interval_ns, now))
           + ((n * interval_ns + 999) / 1000) * interval '1 microsecond'
$$;

-- A rate's interval in nanoseconds, as flow.Rate.Interval computes it
-- (period / limit, truncated); NULL without a rate.
CREATE FUNCTION jobd_rate_interval(period interval, lim integer)
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT (extract(epoch FROM period) * 1000000000)::bigint / lim
$$;
