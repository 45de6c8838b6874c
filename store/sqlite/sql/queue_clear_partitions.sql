-- Drops the partitions' state that new limits of queue :name give no
-- meaning to: their throttles without a throttle_by of partition_key
-- (:throttle_by NULL), their rate state without a rate by partition_key
-- (:rate_by NULL). A row left with nothing is JobPrune's.
UPDATE jobd_queue_partitions SET
    throttled_until = CASE WHEN :throttle_by IS NOT NULL THEN throttled_until END,
    rate_tat = CASE WHEN :rate_by IS NOT NULL THEN rate_tat END
WHERE queue = :name
  AND ((:throttle_by IS NULL AND throttled_until IS NOT NULL)
       OR (:rate_by IS NULL AND rate_tat IS NOT NULL))
