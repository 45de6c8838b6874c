-- The hot path of JobFinish: a batch of successes, each job once, in one
-- statement that reads nothing first: a success's transition needs
-- nothing of the row, and keeps its attempt, attempted_at and journal
-- (job.SucceededState): the row implies its journal entry (state
-- succeeded, finished_at). :state is the state job.Finish decides for a
-- success; :batch is a JSON array of {"id", "token", "owner", "result"},
-- result being the result's JSON text or absent, and owner the lease
-- owner ('': not fenced by it). Fenced like every finish: a job whose row
-- does not come back had lost its lease (or passed its deadline), or is
-- a workflow task (see below); one that comes back with
-- callback true has a callback URL, whose callback the driver records in
-- the outbox (webhook_events_record.sql) in this same transaction; its
-- queue says whose claimers the driver wakes (a queue that counts its
-- running jobs: see countedQueues). The row remembers the outcome
-- (outcome_token, outcome, outcome_owner: see store.Store.JobFinish).
--
-- Planned against any statistics: the jobs come from the IN list (a
-- primary-key search per id), their values from temp.jobd_batch, where
-- batch_load.sql put :batch (a primary-key search per job). Joining
-- json_each(:batch) itself to jobd_jobs, as this statement once did, let
-- the planner put jobd_jobs in the outer loop when ANALYZE had seen the
-- table empty (a drained queue), and then walk the whole queue once per
-- job of the batch.
UPDATE jobd_jobs
SET state = :state,
    result = b.v_result,
    finished_at = :now,
    lease_token = NULL,
    lease_expires_at = NULL,
    deadline = NULL,
    outcome_token = b.v_token,
    outcome = 'succeeded',
    outcome_owner = lease_owner,
    updated_at = :stamp
FROM temp.jobd_batch AS b
WHERE jobd_jobs.id IN (SELECT value ->> 'id' FROM json_each(:batch))
  AND jobd_jobs.id = b.v_id
  AND jobd_jobs.state = 'running'
  AND jobd_jobs.lease_token = b.v_token
  AND (coalesce(b.v_owner, '') = '' OR jobd_jobs.lease_owner = b.v_owner)
  AND (jobd_jobs.deadline IS NULL OR jobd_jobs.deadline > :now)
  -- A workflow task's end has its workflow step, and a child's end its
  -- parent's: the general path's, in the same transaction. Any other job
  -- pays these two tests.
  AND jobd_jobs.workflow_id IS NULL
  AND jobd_jobs.parent_id IS NULL
RETURNING id, callback_url IS NOT NULL AS callback, queue
