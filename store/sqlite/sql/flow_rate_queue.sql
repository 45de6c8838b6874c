-- Advances the rate state of the whole queue :queue to :tat (unix µs),
-- after a limited claim.
UPDATE jobd_queues SET rate_tat = :tat WHERE name = :queue
