-- Deletes the dashboard sessions expired at :now.
DELETE FROM jobd_dashboard_sessions WHERE expires_at <= :now
