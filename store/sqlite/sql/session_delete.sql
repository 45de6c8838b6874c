-- Deletes dashboard session :id (a logout).
DELETE FROM jobd_dashboard_sessions WHERE id = :id
