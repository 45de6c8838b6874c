package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// loadBatch puts the per-job values of a batched UPDATE (body, a JSON
// array of objects keyed by temp.jobd_batch's columns) into that table,
// for the statement to read by primary key: see batch_prepare.sql and
// claim_jobs.sql. The statement is then passed body as :batch too, for
// its IN list.
func loadBatch(ctx context.Context, tx *jobWrite, body []byte) error {
	if _, err := tx.ExecContext(ctx, batchPrepareSQL); err != nil {
		return fmt.Errorf("prepare batch table: %w", err)
	}
	if _, err := tx.ExecContext(ctx, batchLoadSQL, sql.Named("batch", string(body))); err != nil {
		return fmt.Errorf("load batch: %w", err)
	}
	return nil
}
