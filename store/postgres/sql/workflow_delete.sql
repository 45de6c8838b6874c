-- Deletes workflow $1 with its tasks (their journals with them) and
-- edges, when it is final, after workflow_tasks_lock_all.sql locked its
-- tasks in this transaction (tasks before their workflow, as every
-- transaction locks them). Returns the state it had and the number of
-- tasks deleted (none for a running one); no row when there is none.
WITH w AS (
    SELECT id, state FROM jobd_workflows WHERE id = $1 FOR UPDATE
),
doomed AS (
    SELECT id FROM w WHERE state <> 'running'
),
tasks AS (
    DELETE FROM jobd_jobs j USING doomed d
    WHERE j.workflow_id = d.id
    RETURNING j.id
),
edges AS (
    DELETE FROM jobd_workflow_edges e USING tasks t
    WHERE e.job_id = t.id
),
gone AS (
    DELETE FROM jobd_workflows x USING doomed d
    WHERE x.id = d.id
)
SELECT state, (SELECT count(*) FROM tasks) FROM w;
