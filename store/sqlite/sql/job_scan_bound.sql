-- The bound of a newest-first page's scan (ListParams.ScanLimit): the id
-- of the :scan-th newest job below :after, the oldest the page may look
-- at; no row when there are fewer such jobs (the page may then go down
-- to the oldest job). A range of the primary key.
SELECT id
FROM jobd_jobs
WHERE id < :after
ORDER BY id DESC
LIMIT 1 OFFSET :scan - 1
