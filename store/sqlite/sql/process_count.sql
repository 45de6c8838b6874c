-- How many processes process_list.sql would return without cursor and limit.
SELECT count(*) FROM jobd_processes
WHERE namespace = :namespace AND (:status = '' OR status = :status)
