-- Deletes a subscription (its rate limits go in the same transaction,
-- webhook_limits_delete.sql).
DELETE FROM jobd_webhooks WHERE id = :id
