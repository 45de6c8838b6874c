-- Disables or enables a worker.
UPDATE jobd_workers SET disabled = :disabled, updated_at = :now WHERE id = :id
