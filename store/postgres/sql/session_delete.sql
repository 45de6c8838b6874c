-- Deletes dashboard session $1 (a logout).
DELETE FROM jobd_dashboard_sessions WHERE id = $1;
