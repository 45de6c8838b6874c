-- Loads a batch of per-job values (:batch, a JSON array of objects keyed
-- by the column names without their v_; an absent key is NULL) into temp.jobd_batch, which
-- batch_prepare.sql made and emptied, for a batched UPDATE that reads
-- them by primary key (see claim_jobs.sql).
INSERT INTO temp.jobd_batch (v_id, v_token, v_owner, v_result, v_state, v_run_at, v_attempt,
                             v_finished_at, v_last_error, v_attempted_at, v_entries, v_outcome)
SELECT value ->> 'id', value ->> 'token', value ->> 'owner', value ->> 'result', value ->> 'state',
       value ->> 'run_at', value ->> 'attempt', value ->> 'finished_at', value ->> 'last_error',
       value ->> 'attempted_at', value -> 'entries', value ->> 'outcome'
FROM json_each(:batch)
