-- The hot path of JobFinish: a batch of successes of distinct jobs, each
-- fenced by its lease token, applied without reading the rows first: a
-- success's transition needs nothing of the row but its attempt, which it
-- keeps and journals (job.SucceededState). $1 now, $2 job ids, $3 lease
-- tokens, $4 results (NULL: none), $5 the state and $6 the journal kind
-- that job.Finish decides for a success, $7 lease owners ('': not
-- fenced by the owner). Returns only the ids that finished; a missing id
-- lost its lease.
WITH done AS (
    UPDATE jobd_jobs j SET
        state = $5::text,
        result = o.result,
        lease_token = NULL,
        lease_expires_at = NULL,
        finished_at = coalesce($1::timestamptz, now()),
        updated_at = coalesce($1::timestamptz, now())
    FROM unnest($2::uuid[], $3::uuid[], $4::jsonb[], $7::text[]) AS o(id, token, result, owner)
    WHERE j.id = o.id
      AND j.state = 'running'
      AND j.lease_token = o.token
      AND (o.owner = '' OR j.lease_owner = o.owner)
    RETURNING j.id, o.token, j.attempt, j.finished_at
),
journal AS (
    INSERT INTO jobd_job_events (job_id, at, kind, attempt)
    SELECT id, finished_at, $6::text, attempt FROM done
)
SELECT id, token FROM done;
