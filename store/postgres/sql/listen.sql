-- Subscribes a dedicated connection to wake-ups (wake.sql and the
-- pg_notify calls of the writes that make jobs available) and to cancel
-- requests of running jobs (cancel.sql). Both run in one simple-protocol
-- round trip.
LISTEN jobd_wake;
LISTEN jobd_cancel;
