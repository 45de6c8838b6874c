-- Subscribes a dedicated connection to wake-ups (wake.sql and the
-- pg_notify calls of the writes that make jobs available).
LISTEN jobd_wake;
