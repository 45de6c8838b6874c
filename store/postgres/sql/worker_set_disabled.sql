-- Disables ($3 true) or enables worker $2; $1 now.
UPDATE jobd_workers SET
    disabled = $3,
    updated_at = coalesce($1::timestamptz, now())
WHERE id = $2;
