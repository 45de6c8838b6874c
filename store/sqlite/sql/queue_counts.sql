SELECT queue, state, count(*) FROM jobd_jobs GROUP BY queue, state
