-- What the rows of a batch's lost outcomes remember of the last outcome
-- applied to them (store.Accepted), for JobFinish to tell a repeat from a
-- lost lease (store.MarkRepeats): $1 job ids and $2 lease tokens, one
-- element per lost outcome. Only the rows whose remembered token is the
-- outcome's come back, with their current state. It locks nothing: a
-- repeat changes nothing, and answers the state it read.
--
-- j.id = ANY (ARRAY[o.id]): a probe of the primary key per job whatever
-- the statistics, never a walk of it (see claim.sql).
SELECT j.id, j.outcome_token, j.outcome, coalesce(j.outcome_owner, ''), j.state
FROM unnest($1::uuid[], $2::uuid[]) AS o(id, token)
JOIN jobd_jobs j ON j.id = ANY (ARRAY[o.id])
WHERE j.outcome_token = o.token;
