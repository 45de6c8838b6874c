-- The settings of every queue that has a settings row: paused, the limits
-- (NULL for none), and the throttle of the whole queue when it has not
-- passed at :now.
SELECT name, paused, global_limit, partition_limit, rate_limit, rate_period_us, rate_by,
       rate_burst, throttle_by, CASE WHEN throttled_until > :now THEN throttled_until END
FROM jobd_queues
ORDER BY name
