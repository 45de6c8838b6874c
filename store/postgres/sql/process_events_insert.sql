-- Appends events to a process's history, numbered after $4, its last
-- event_id. $1 now, $2 namespace, $3 process id, $5 payloads in order.
INSERT INTO jobd_process_events (namespace, process_id, event_id, at, payload)
SELECT $2, $3, $4 + e.n, coalesce($1::timestamptz, now()), e.payload
FROM unnest($5::jsonb[]) WITH ORDINALITY AS e(payload, n);
