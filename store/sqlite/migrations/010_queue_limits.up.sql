-- 010: the queues a remote worker may claim from and an API key may
-- submit to and read, as JSON arrays of strings (job.QueuePatterns);
-- '[]', the default of every row that predates them, limits nothing.
ALTER TABLE jobd_workers ADD COLUMN queues TEXT NOT NULL DEFAULT '[]';
ALTER TABLE jobd_api_keys ADD COLUMN queues TEXT NOT NULL DEFAULT '[]';
