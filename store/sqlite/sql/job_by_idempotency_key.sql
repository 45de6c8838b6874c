SELECT * FROM jobd_jobs WHERE idempotency_key = ?
