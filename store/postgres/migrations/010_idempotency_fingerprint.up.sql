-- 010: the fingerprint of the request that made a job with an idempotency
-- key (job.Fingerprint), so that the key reused with a different request
-- is refused (job.ErrIdempotencyMismatch) instead of answered with the
-- job. NULL for a job without a key, and for one stored before this
-- migration, which matches any request. Adding a nullable column without
-- a default rewrites nothing.
ALTER TABLE jobd_jobs ADD COLUMN idempotency_fingerprint text;
