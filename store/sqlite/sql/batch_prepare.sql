-- The per-job values of a batched UPDATE, one row per job keyed by its id
-- (v_id; the v_ prefix keeps its columns apart from the jobs' own),
-- on the writer's connection (a temporary table lives and dies with it;
-- temp_store is memory). Emptied before each batch; the transaction's
-- rollback empties it too.
CREATE TEMP TABLE IF NOT EXISTS jobd_batch (
    v_id           TEXT PRIMARY KEY,
    v_token        TEXT,
    v_owner        TEXT,
    v_result       TEXT,
    v_state        TEXT,
    v_run_at       INTEGER,
    v_attempt      INTEGER,
    v_finished_at  INTEGER,
    v_last_error   TEXT,
    v_attempted_at INTEGER,
    v_entries      TEXT,
    v_outcome      TEXT
) WITHOUT ROWID;
DELETE FROM temp.jobd_batch;
