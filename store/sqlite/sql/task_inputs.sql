-- The inputs of claimed task :id: its dependencies' refs, states,
-- results and last errors (job.Input), read at its claim, in its write
-- transaction, never copied into its row. CROSS JOIN keeps the edges the
-- outer loop: each dependency is found by its primary key.
SELECT d.workflow_ref, d.state, d.result, coalesce(d.last_error, '')
FROM jobd_workflow_edges AS e
CROSS JOIN jobd_jobs AS d
WHERE e.job_id = :id AND d.id = e.depends_on
