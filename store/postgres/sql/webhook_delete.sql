-- Deletes a subscription and its rate limits. $1 id. Returns how many
-- subscriptions it deleted (0 or 1).
WITH limits AS (
    DELETE FROM jobd_webhook_limits WHERE webhook_id = $1
),
deleted AS (
    DELETE FROM jobd_webhooks WHERE id = $1 RETURNING id
)
SELECT count(*) FROM deleted;
