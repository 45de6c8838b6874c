-- A signal sent to a job ($1, name $2): its payload and whether it was
-- delivered (false: kept, not delivered yet).
SELECT payload, delivered_at IS NOT NULL
FROM jobd_signals
WHERE job_id = $1 AND name = $2;
