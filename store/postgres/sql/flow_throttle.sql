-- Sets the throttles of outcomes that JobFinish applies in this
-- transaction (store.ThrottlesOf): $2 the throttled jobs' ids, $3 when
-- each throttle ends; $1 now (NULL: the database's now()). A job's
-- throttle stops its queue (jobd_queues.throttled_until, the row created
-- when the queue has none), or, when the queue's throttle_by is
-- partition_key, its partition ('' for a job without a partition_key), up
-- to the later of the throttle already set and the new one.
--
-- The jobs' rows are locked by this transaction (lock_held.sql), found by
-- primary key. A queue's row may be locked by a limited claim
-- (flow_lock.sql): the throttle waits for that claim's commit.
WITH throttle AS (
    SELECT j.queue, coalesce(j.partition_key, '') AS partition_key, t.until,
           coalesce(q.throttle_by IS NOT NULL, false) AS by_partition
    FROM unnest($2::uuid[], $3::timestamptz[]) AS t(id, until)
    JOIN jobd_jobs j ON j.id = ANY (ARRAY[t.id])
    LEFT JOIN jobd_queues q ON q.name = j.queue
),
queues AS (
    INSERT INTO jobd_queues AS q (name, throttled_until, created_at, updated_at)
    SELECT queue, max(until), coalesce($1::timestamptz, now()), coalesce($1::timestamptz, now())
    FROM throttle
    WHERE NOT by_partition
    GROUP BY queue
    ON CONFLICT (name) DO UPDATE
        SET throttled_until = greatest(q.throttled_until, excluded.throttled_until)
    RETURNING 1
),
partitions AS (
    INSERT INTO jobd_queue_partitions AS p (queue, partition_key, throttled_until)
    SELECT queue, partition_key, max(until)
    FROM throttle
    WHERE by_partition
    GROUP BY queue, partition_key
    ON CONFLICT (queue, partition_key) DO UPDATE
        SET throttled_until = greatest(p.throttled_until, excluded.throttled_until)
    RETURNING 1
)
SELECT (SELECT count(*) FROM queues) + (SELECT count(*) FROM partitions);
