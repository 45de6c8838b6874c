-- Forgets a signal ($1 job, $2 name) a wait delivered before, when the
-- job waits for one of its name again: until a new one comes, the wait
-- reads as timed out.
DELETE FROM jobd_signals WHERE job_id = $1 AND name = $2 AND delivered_at IS NOT NULL;
