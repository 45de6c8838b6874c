-- Records the workflow.finished event of workflow :id in the outbox, in
-- the transaction that ended it (store.WebhookStore).
INSERT INTO jobd_webhook_events (type, at, workflow_id, workflow_name, workflow_state, finished_at)
SELECT 'workflow.finished', :now, id, name, state, finished_at
FROM jobd_workflows
WHERE id = :id
