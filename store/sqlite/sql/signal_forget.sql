-- Forgets a signal a wait delivered before, when the job waits for one
-- of its name again: until a new one comes, the wait reads as timed out.
DELETE FROM jobd_signals WHERE job_id = :id AND name = :name AND delivered_at IS NOT NULL
