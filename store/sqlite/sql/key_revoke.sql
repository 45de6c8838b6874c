DELETE FROM jobd_api_keys WHERE id = ?
