-- 004: the events journal moves into the job's row. (The PostgreSQL
-- migration 005_journal says why and what is implied, what stored.)
-- journal is a JSON array as TEXT of {"kind", "at" (unix microseconds),
-- "attempt", "detail" (left out when empty)}, as job.MarshalJournal
-- writes it; attempted_at is unix microseconds.
ALTER TABLE jobd_jobs ADD COLUMN attempted_at INTEGER;
ALTER TABLE jobd_jobs ADD COLUMN journal TEXT;

-- Each job's events become its stored journal, but for those its row
-- implies: the first, "queued", and a succeeded job's last, "succeeded".
-- attempted_at stays NULL: a migrated job's claims are all stored.
UPDATE jobd_jobs
SET journal = stored.entries
FROM (
    SELECT e.job_id,
           json_group_array(json(CASE WHEN e.detail = ''
                   THEN json_object('kind', e.kind, 'at', e.at, 'attempt', e.attempt)
                   ELSE json_object('kind', e.kind, 'at', e.at, 'attempt', e.attempt, 'detail', e.detail)
               END) ORDER BY e.id) AS entries
    FROM (SELECT ev.job_id, ev.id, ev.at, ev.kind, ev.attempt, ev.detail,
                 row_number() OVER (PARTITION BY ev.job_id ORDER BY ev.id) AS n,
                 count(*) OVER (PARTITION BY ev.job_id) AS total
          FROM jobd_job_events AS ev) AS e
    JOIN jobd_jobs AS owner ON owner.id = e.job_id
    WHERE NOT (e.n = 1 AND e.kind = 'queued')
      AND NOT (e.n = e.total AND e.kind = 'succeeded' AND owner.state = 'succeeded')
    GROUP BY e.job_id
) AS stored
WHERE jobd_jobs.id = stored.job_id;

DROP TABLE jobd_job_events;
DELETE FROM sqlite_sequence WHERE name = 'jobd_job_events';
