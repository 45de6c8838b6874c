-- Appends a batch of journal entries, in the transaction of the
-- transitions they record. :events is a JSON array of
-- {"job_id", "kind", "attempt", "detail"}, in order.
INSERT INTO jobd_job_events (job_id, at, kind, attempt, detail)
SELECT e.value ->> 'job_id', :at, e.value ->> 'kind', e.value ->> 'attempt', e.value ->> 'detail'
FROM json_each(:events) AS e
ORDER BY e.key
