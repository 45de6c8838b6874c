-- The file's journal mode, which Open requires to be WAL.
PRAGMA journal_mode
