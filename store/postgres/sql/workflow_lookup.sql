-- The retained workflow of an idempotency key, with the fingerprint of
-- the request that made it, for the driver to hold a key's twin to its
-- request (job.ErrIdempotencyMismatch). $1 the key. No row when it is
-- gone (pruned between the insert and this read).
SELECT idempotency_fingerprint,
       id, name, state, coalesce(idempotency_key, ''), tasks, succeeded, failed, canceled,
       created_at, updated_at, finished_at
FROM jobd_workflows
WHERE idempotency_key = $1;
