-- The value stored under :name.
SELECT value FROM jobd_settings WHERE name = :name
