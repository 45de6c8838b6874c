-- Deletes the rate limits of a subscription.
DELETE FROM jobd_webhook_limits WHERE webhook_id = :id
