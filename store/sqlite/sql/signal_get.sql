-- A signal sent to a job: its payload and when it was delivered (NULL:
-- kept, not delivered yet).
SELECT payload, delivered_at
FROM jobd_signals
WHERE job_id = :id AND name = :name
