-- 011: the queues a remote worker may claim from and an API key may
-- submit to and read (job.QueuePatterns: names and NAME.* prefixes).
-- Empty, the default of every row that predates them, limits nothing.
-- A constant default adds the columns without rewriting the tables.
ALTER TABLE jobd_workers ADD COLUMN queues text[] NOT NULL DEFAULT '{}';
ALTER TABLE jobd_api_keys ADD COLUMN queues text[] NOT NULL DEFAULT '{}';
