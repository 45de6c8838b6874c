-- 006: the W3C traceparent a job's submitter sent, so that each execution
-- of the job is a span of the submitter's trace. NULL for none; adding a
-- nullable column without a default rewrites nothing.
ALTER TABLE jobd_jobs ADD COLUMN trace_parent text;
