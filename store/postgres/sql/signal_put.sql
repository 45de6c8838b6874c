-- Keeps a signal sent to a job (JobSignal): $1 job, $2 name, $3 payload,
-- $4 now. A second one of a name replaces the first, kept again until a
-- wait delivers it.
INSERT INTO jobd_signals (job_id, name, payload, sent_at, delivered_at)
VALUES ($1, $2, $3, coalesce($4::timestamptz, now()), NULL)
ON CONFLICT (job_id, name) DO UPDATE
SET payload = excluded.payload, sent_at = excluded.sent_at, delivered_at = NULL;
