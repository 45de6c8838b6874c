-- Registers a worker.
INSERT INTO jobd_workers (id, name, capabilities, metadata, status, created_at, updated_at)
VALUES (:id, :name, :capabilities, :metadata, 'idle', :now, :now)
