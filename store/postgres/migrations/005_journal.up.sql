-- 005: the events journal moves into the job's row. Its three common
-- entries are implied by columns the transitions write anyway, never
-- stored: "queued" by created_at, the current attempt's "claimed" by
-- attempted_at (with the attempt and lease_owner), a success's
-- "succeeded" by state and finished_at. Every other entry is stored, in
-- order, in journal: a JSON array of {"kind", "at" (unix microseconds),
-- "attempt", "detail" (left out when empty)} (job.Journal renders them,
-- job.MarshalJournal writes them). An insert, a claim and a success, the
-- hot path, then write no journal: per job, one heap row and its index
-- entries instead of four rows and seven more index entries, and no
-- journal rows for retention to delete.
--
-- Nullable columns without a default: adding them rewrites nothing, and
-- neither is indexed, so updates that set them can stay HOT.
ALTER TABLE jobd_jobs ADD COLUMN attempted_at timestamptz;
ALTER TABLE jobd_jobs ADD COLUMN journal jsonb;

-- Each job's events become its stored journal, but for those its row
-- implies: the first, "queued", and a succeeded job's last, "succeeded".
-- attempted_at stays NULL: a migrated job's claims are all stored.
UPDATE jobd_jobs j
SET journal = stored.entries
FROM (
    SELECT e.job_id,
           jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
                   'kind', e.kind,
                   'at', (extract(epoch FROM e.at) * 1000000)::bigint,
                   'attempt', e.attempt,
                   'detail', nullif(e.detail, '')))
               ORDER BY e.id) AS entries
    FROM (SELECT ev.job_id, ev.id, ev.at, ev.kind, ev.attempt, ev.detail,
                 row_number() OVER (PARTITION BY ev.job_id ORDER BY ev.id) AS n,
                 count(*) OVER (PARTITION BY ev.job_id) AS total
          FROM jobd_job_events ev) e
    JOIN jobd_jobs owner ON owner.id = e.job_id
    WHERE NOT (e.n = 1 AND e.kind = 'queued')
      AND NOT (e.n = e.total AND e.kind = 'succeeded' AND owner.state = 'succeeded')
    GROUP BY e.job_id
) stored
WHERE j.id = stored.job_id;

DROP TABLE jobd_job_events;
