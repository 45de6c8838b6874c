-- Stores :value under :name unless a value is stored there, and returns
-- the stored value.
INSERT INTO jobd_settings (name, value, created_at)
VALUES (:name, :value, :now)
ON CONFLICT (name) DO UPDATE SET name = excluded.name
RETURNING value
