-- The feed's horizon: the start of the oldest transaction still open in
-- this database on another client connection, or now() when there is
-- none. A job's updated_at is its writing transaction's now(), that is
-- its start, so any change not yet committed has updated_at >= the
-- horizon: a feed page that holds only rows below it, read by a later
-- statement (a new snapshot), can never have a change commit behind its
-- cursor.
--
-- pg_stat_activity shows xact_start only for sessions of the same role
-- (or to roles with pg_read_all_stats): transactions of other roles are
-- not waited for. Other backend types (autovacuum, WAL senders) never
-- write jobs and would only hold the feed back.
SELECT least(min(xact_start), now())
FROM pg_stat_activity
WHERE datname = current_database()
  AND backend_type = 'client backend'
  AND xact_start IS NOT NULL
  AND pid <> pg_backend_pid();
