-- How many processes process_list.sql would return without its cursor and
-- limit. $1 namespace, $2 status ('': any).
SELECT count(*) FROM jobd_processes WHERE namespace = $1 AND ($2 = '' OR status = $2);
