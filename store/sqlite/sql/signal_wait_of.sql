-- The signal a job last waited for ('' for none), and the kind and
-- detail of the last entry its journal stores ('' for none), which say
-- whether a queued job is in a timed wait for it still
-- (job.InTimedSignalWait).
SELECT coalesce(signal_wait, ''),
       coalesce(json_extract(journal, '$[#-1].kind'), ''),
       coalesce(json_extract(journal, '$[#-1].detail'), '')
FROM jobd_jobs WHERE id = :id
