-- Deletes API key $1.
DELETE FROM jobd_api_keys WHERE id = $1;
