-- Pauses or resumes a queue, creating its settings row when it has none.
INSERT INTO jobd_queues (name, paused, created_at, updated_at)
VALUES (:name, :paused, :now, :now)
ON CONFLICT (name) DO UPDATE
SET paused = excluded.paused, updated_at = excluded.updated_at
