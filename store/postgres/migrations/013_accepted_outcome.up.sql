-- 013: what each job remembers of the last outcome its lease holder
-- reported and JobFinish applied: the lease token of that attempt, the
-- outcome's status (succeeded, failed, canceled, released) and the lease
-- owner that held it, so that the same outcome sent again with that
-- token (its answer was lost) is answered as a repeat instead of a lost
-- lease (store.Store.JobFinish). NULL until a holder's outcome is
-- applied; a rescue or a time-out leaves them as they are. Adding
-- nullable columns without a default rewrites nothing.
ALTER TABLE jobd_jobs
    ADD COLUMN outcome_token uuid,
    ADD COLUMN outcome text,
    ADD COLUMN outcome_owner text;
