-- Inserts one edge of a workflow: task :job_id depends on :depends_on.
INSERT INTO jobd_workflow_edges (job_id, depends_on) VALUES (:job_id, :depends_on)
