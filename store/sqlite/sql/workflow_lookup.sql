-- The retained workflow of idempotency key :key, with the fingerprint of
-- the request that made it (job.ErrIdempotencyMismatch).
SELECT coalesce(idempotency_fingerprint, ''),
       id, name, state, coalesce(idempotency_key, ''), tasks, succeeded, failed, canceled,
       created_at, updated_at, finished_at
FROM jobd_workflows
WHERE idempotency_key = :key
