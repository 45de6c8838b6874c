-- Registers a worker.
INSERT INTO jobd_workers (id, name, capabilities, metadata, queues, status, created_at, updated_at)
VALUES (:id, :name, :capabilities, :metadata, :queues, 'idle', :now, :now)
