-- The API key record with public prefix ?, and, for a worker's key, its
-- worker (without the count of its jobs), read in the same statement:
-- has_worker says whether the key names one.
SELECT k.id, k.name, k.prefix, k.hash, k.scopes, k.created_at, coalesce(k.worker_id, ''), k.queues,
       w.id IS NOT NULL AS has_worker,
       coalesce(w.id, ''), coalesce(w.name, ''), coalesce(w.capabilities, '[]'), coalesce(w.metadata, '{}'),
       coalesce(w.status, 'idle'), coalesce(w.disabled, 0), w.last_heartbeat_at,
       coalesce(w.jobs_done, 0), coalesce(w.jobs_failed, 0), coalesce(w.created_at, k.created_at),
       coalesce(w.updated_at, k.created_at), coalesce(w.queues, '[]'), 0
FROM jobd_api_keys AS k
LEFT JOIN jobd_workers AS w ON w.id = k.worker_id
WHERE k.prefix = ?
