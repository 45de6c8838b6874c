-- Appends one event to a process's history.
INSERT INTO jobd_process_events (namespace, process_id, event_id, at, payload)
VALUES (:namespace, :id, :event_id, :now, :payload)
