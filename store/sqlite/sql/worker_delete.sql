-- Deletes a worker (its keys go first, in the same transaction).
DELETE FROM jobd_workers WHERE id = ?
