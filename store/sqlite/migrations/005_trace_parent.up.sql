-- 005: the W3C traceparent a job's submitter sent, so that each execution
-- of the job is a span of the submitter's trace. NULL for none.
ALTER TABLE jobd_jobs ADD COLUMN trace_parent TEXT;
