-- Stores $3 under $2 unless a value is stored there, and returns the
-- stored value; $1 now. A concurrent first insert makes this one wait for
-- it to commit; the no-op update then returns the winner's value.
INSERT INTO jobd_settings AS s (name, value, created_at)
VALUES ($2, $3, coalesce($1::timestamptz, now()))
ON CONFLICT (name) DO UPDATE SET name = s.name
RETURNING s.value;
