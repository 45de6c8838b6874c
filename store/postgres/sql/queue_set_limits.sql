-- Replaces the flow control of queue $2 (flow.Limits, checked by the
-- driver), creating its settings row; $1 now. $3 global_limit, $4
-- partition_limit, $5 rate's limit, $6 its period, $7 its by, $8 its
-- burst, $9 throttle_by: NULL for none.
--
-- The state the new limits give no meaning to goes: the queue's rate
-- state without a rate of the whole queue, the partitions' rate state
-- without a rate by partition_key, their throttles without a throttle_by
-- of partition_key (a row left with nothing is the prune duty's). The
-- throttle of the whole queue stays until it passes. The queue's workers
-- are woken (on commit), unless it is paused: the new limits may allow
-- more.
--
-- A limited claim of the queue holds its row (flow_lock.sql): this waits
-- for it, and every claim after the commit, on any node, applies the new
-- limits.
WITH saved AS (
    INSERT INTO jobd_queues AS q (name, global_limit, partition_limit, rate_limit, rate_period,
                                  rate_by, rate_burst, throttle_by, created_at, updated_at)
    VALUES ($2, $3, $4, $5, $6, $7, $8, $9, coalesce($1::timestamptz, now()), coalesce($1::timestamptz, now()))
    ON CONFLICT (name) DO UPDATE SET
        global_limit = excluded.global_limit,
        partition_limit = excluded.partition_limit,
        rate_limit = excluded.rate_limit,
        rate_period = excluded.rate_period,
        rate_by = excluded.rate_by,
        rate_burst = excluded.rate_burst,
        throttle_by = excluded.throttle_by,
        rate_tat = CASE WHEN excluded.rate_limit IS NOT NULL AND excluded.rate_by IS NULL
                        THEN q.rate_tat END,
        updated_at = excluded.updated_at
    RETURNING q.name, q.paused
),
cleared AS (
    UPDATE jobd_queue_partitions p SET
        throttled_until = CASE WHEN $9::text IS NOT NULL THEN p.throttled_until END,
        rate_tat = CASE WHEN $5::integer IS NOT NULL AND $7::text IS NOT NULL THEN p.rate_tat END
    WHERE p.queue = $2
      AND (($9::text IS NULL AND p.throttled_until IS NOT NULL)
           OR (($5::integer IS NULL OR $7::text IS NULL) AND p.rate_tat IS NOT NULL))
)
SELECT count(pg_notify('jobd_wake', name)) FROM saved WHERE NOT paused;
