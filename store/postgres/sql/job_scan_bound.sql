-- The bound of a newest-first page's scan (ListParams.ScanLimit): the id
-- of the $2-th newest job below the cursor $1 (NULL: the first page), the
-- oldest the page may look at; no row when there are fewer such jobs (the
-- page may then go down to the oldest job). An index-only range of the
-- primary key.
SELECT id
FROM jobd_jobs
WHERE id < coalesce($1::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff')
ORDER BY id DESC
OFFSET $2 - 1
LIMIT 1;
