SELECT * FROM jobd_jobs WHERE id = ?
