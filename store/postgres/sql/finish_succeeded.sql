-- The hot path of JobFinish: a batch of successes of distinct jobs, each
-- fenced by its lease token and owner, applied without reading the rows
-- first: a success's transition needs nothing of the row, and keeps its
-- attempt, attempted_at and journal (job.SucceededState): the row implies
-- its journal entry (state succeeded, finished_at). $1 now, $2 job ids,
-- $3 lease tokens, $4 results (NULL: none), $5 the state that job.Finish
-- decides for a success, $6 lease owners ('': not fenced by the owner).
-- Returns only the ids that finished; a missing id lost its lease (or
-- its attempt passed its deadline, which ends the lease), or is a
-- workflow task's, which the driver applies by the general path. The row
-- remembers the outcome (outcome_token, outcome, outcome_owner: see
-- store.Store.JobFinish).
--
-- j.id = ANY (ARRAY[o.id]): a probe of the primary key per job whatever
-- the statistics, never a walk of it (see claim.sql).
--
-- A job with a callback URL records its callback in the outbox, in this
-- same statement (store.WebhookStore); for the others the outbox's
-- INSERT reads the rows the UPDATE returned and writes nothing.
--
-- $7 names the queues that count their running jobs (a global_limit or a
-- partition_limit; the driver's view, limitedQueues): a job of one of
-- them that finishes makes room that claimers on any node may wait for,
-- so each such queue is woken once, on commit (as insert.sql wakes). For
-- a batch of other queues that is a test per row and nothing sent.
WITH done AS (
    UPDATE jobd_jobs j SET
        state = $5::text,
        result = o.result,
        lease_token = NULL,
        lease_expires_at = NULL,
        deadline = NULL,
        outcome_token = o.token,
        outcome = 'succeeded',
        outcome_owner = j.lease_owner,
        finished_at = coalesce($1::timestamptz, now()),
        updated_at = coalesce($1::timestamptz, now())
    FROM unnest($2::uuid[], $3::uuid[], $4::jsonb[], $6::text[]) AS o(id, token, result, owner)
    WHERE j.id = ANY (ARRAY[o.id])
      AND j.state = 'running'
      AND j.lease_token = o.token
      AND (o.owner = '' OR j.lease_owner = o.owner)
      AND (j.deadline IS NULL OR j.deadline > coalesce($1::timestamptz, now()))
      -- A workflow task's end has its workflow step, and a child's end
      -- its parent's, in its transaction: the general path's (this
      -- statement commits with its round). Any other job pays these two
      -- tests.
      AND j.workflow_id IS NULL
      AND j.parent_id IS NULL
    RETURNING j.id, o.token, j.callback_url, j.queue, j.kind, j.attempt, j.max_attempts,
              j.finished_at
),
-- A data-modifying CTE runs whether or not the statement reads it.
callbacks AS (
    INSERT INTO jobd_webhook_events (type, at, job_id, queue, kind, attempt, max_attempts,
                                     finished_at, url)
    SELECT 'callback', finished_at, id, queue, kind, attempt, max_attempts, finished_at,
           callback_url
    FROM done
    WHERE callback_url IS NOT NULL
),
-- A CTE that only reads runs only when the statement reads it, hence the
-- join below.
woken AS (
    SELECT count(pg_notify('jobd_wake', queue)) AS queues
    FROM (SELECT DISTINCT queue FROM done WHERE queue = ANY ($7::text[])) limited
)
SELECT id, token FROM done, woken;
