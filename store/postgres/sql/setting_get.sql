-- The value stored under $1.
SELECT value FROM jobd_settings WHERE name = $1;
