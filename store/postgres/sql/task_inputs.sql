-- The inputs of claimed tasks $1: for each, its dependencies' refs,
-- states, results and last errors (job.Input), read once at the claim,
-- never copied into the dependents' rows. The dependencies are found by
-- the edges' primary key, each row by a probe of the jobs' primary key.
SELECT e.job_id, d.workflow_ref, d.state, d.result, coalesce(d.last_error, '')
FROM unnest($1::uuid[]) AS t(id)
JOIN jobd_workflow_edges e ON e.job_id = t.id
JOIN jobd_jobs d ON d.id = ANY (ARRAY[e.depends_on]);
