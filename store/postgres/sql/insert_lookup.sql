-- Finds, for each insert that ON CONFLICT skipped, the job it duplicates:
-- the one with its idempotency key, else the queued or running one with its
-- args hash. $1 idempotency keys, $2 args hashes (NULL when unused); the
-- result's ord is the 1-based position in those arrays. A position with no
-- row lost its twin in between (finished, pruned) and is inserted again.
-- The twin's idempotency fingerprint comes second, for the driver to hold
-- a key's twin to its request (job.ErrIdempotencyMismatch).
SELECT p.ord, j.idempotency_fingerprint,
       j.id, j.queue, j.kind, j.args, j.state, j.priority, j.run_at, j.attempt, j.max_attempts,
       j.lease_ttl, j.lease_token, j.lease_owner, j.lease_expires_at, j.heartbeat_at, j.lock_key,
       j.partition_key, j.idempotency_key, j.args_hash, j.cancel_requested, j.progress,
       j.checkpoint, j.result, j.last_error, j.created_at, j.started_at, j.finished_at,
       j.updated_at, j.requires, j.prefers, j.attempted_at, j.trace_parent,
       j.schedule, j.scheduled_for, j.timeout, j.deadline, j.rerun, j.previous_state, j.previous_result, j.callback_url,
       CASE WHEN j.workflow_id IS NOT NULL OR j.wait_for IS NOT NULL OR j.parent_id IS NOT NULL THEN json_build_array(
           j.workflow_id, j.workflow_ref, j.run_on, j.wait_for, j.dependencies, j.pending, j.canceled_by, j.parent_id, j.child_key) END
FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS p(idempotency_key, args_hash, ord)
CROSS JOIN LATERAL (
    (SELECT * FROM jobd_jobs WHERE idempotency_key = p.idempotency_key)
    UNION ALL
    (SELECT * FROM jobd_jobs
     WHERE args_hash = p.args_hash AND state IN ('queued', 'running'))
    LIMIT 1
) j;
