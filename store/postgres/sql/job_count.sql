-- The number of jobs matching a list's filters, ignoring its cursor and
-- page size. $1 queue, $2 kind, $3 states, $4 lock_key, $5 partition_key,
-- $6 updated_since (NULL: any), $7 idempotency_key (NULL: any).
-- $8, $9: the queue names (NULL: any queue) and prefixes a caller is
-- limited to (store.ListParams.QueuesIn).
SELECT count(*)
FROM jobd_jobs
WHERE ($1::text IS NULL OR queue = $1)
  AND ($2::text IS NULL OR kind = $2)
  AND ($3::text[] IS NULL OR state = ANY ($3))
  AND ($4::text IS NULL OR lock_key = $4)
  AND ($5::text IS NULL OR partition_key = $5)
  AND ($6::timestamptz IS NULL OR updated_at >= $6)
  AND ($7::text IS NULL OR idempotency_key = $7)
  AND ($8::text[] IS NULL OR queue = ANY ($8)
       OR EXISTS (SELECT FROM unnest($9::text[]) AS p (prefix) WHERE starts_with(queue, p.prefix)));
