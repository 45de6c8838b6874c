-- Deletes up to :limit outbox events older than :before, oldest first: a
-- store whose events nobody dispatches (an engine embedded without
-- package webhook) keeps them no longer than its jobs.
DELETE FROM jobd_webhook_events
WHERE id IN (
    SELECT id FROM jobd_webhook_events
    WHERE at < :before
    ORDER BY id
    LIMIT :limit
)
