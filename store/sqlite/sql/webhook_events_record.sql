-- Records outbox events of jobs this transaction changed (see
-- store.WebhookStore): :events is a JSON array of {"id" (the job), "type"}.
-- An event of type 'callback' carries the job's callback URL. The job's
-- queue, kind, attempt, max attempts, last error and finished_at are read
-- from its row as the transition left it. CROSS JOIN keeps json_each
-- the outer loop whatever the statistics: a primary-key search per event,
-- never a walk of the jobs.
INSERT INTO jobd_webhook_events (type, at, job_id, queue, kind, attempt, max_attempts,
                                 error, finished_at, url)
SELECT e.value ->> 'type', :now, j.id, j.queue, j.kind, j.attempt, j.max_attempts,
       j.last_error, j.finished_at,
       CASE WHEN e.value ->> 'type' = 'callback' THEN j.callback_url END
FROM json_each(:events) AS e
CROSS JOIN jobd_jobs AS j
WHERE j.id = e.value ->> 'id'
