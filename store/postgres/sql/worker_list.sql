-- Every worker, oldest first, with the jobs whose lease it holds. The
-- count walks the lease index (running jobs only).
SELECT id, name, capabilities, metadata, status, disabled, last_heartbeat_at,
       jobs_done, jobs_failed, created_at, updated_at, queues,
       (SELECT count(*) FROM jobd_jobs j
        WHERE j.lease_expires_at IS NOT NULL AND j.lease_owner = w.id) AS running
FROM jobd_workers w
ORDER BY created_at, id;
