-- What the rows of a batch's lost outcomes remember of the last outcome
-- applied to them (store.Accepted), for JobFinish to tell a repeat from a
-- lost lease (store.MarkRepeats), read in JobFinish's write transaction.
-- :leases is a JSON array of {"id", "token"}, one per lost outcome. Only
-- the rows whose remembered token is the outcome's come back, with their
-- current state. CROSS JOIN keeps the batch the outer loop: each job is
-- found by primary key.
SELECT j.id, j.outcome_token, j.outcome, coalesce(j.outcome_owner, ''), j.state
FROM json_each(:leases) AS l
CROSS JOIN jobd_jobs AS j
WHERE j.id = l.value ->> 'id'
  AND j.outcome_token = l.value ->> 'token'
