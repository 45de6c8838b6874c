-- Applies a decided change of workflow :id (store.DecideWorkflows): its
-- state, its counters, its finished_at (NULL: cleared) and the entries
-- to append to its journal (:entries, NULL for none). It decides
-- nothing.
UPDATE jobd_workflows
SET state = :state,
    succeeded = :succeeded,
    failed = :failed,
    canceled = :canceled,
    finished_at = :finished_at,
    journal = CASE
        WHEN :entries IS NULL THEN journal
        WHEN journal IS NULL THEN :entries
        ELSE json(substr(journal, 1, length(journal) - 1) || ',' || substr(:entries, 2))
    END,
    updated_at = :now
WHERE id = :id
