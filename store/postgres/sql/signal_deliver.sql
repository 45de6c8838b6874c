-- Marks a job's ($1) signal ($2) delivered at $3: a wait took it.
UPDATE jobd_signals SET delivered_at = coalesce($3::timestamptz, now()) WHERE job_id = $1 AND name = $2;
