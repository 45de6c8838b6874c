package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// JobInsertMany validates every params, then creates the jobs in one
// transaction. A params whose idempotency key is taken, or whose args hash
// (with Unique "active") belongs to a queued or running job, yields that
// job with Created false. This also holds within the batch: the rows are
// inserted in order, so a later params finds an earlier one.
func (s *executor) JobInsertMany(ctx context.Context, params []job.InsertParams) ([]store.InsertResult, error) {
	if len(params) == 0 {
		return nil, nil
	}
	type pending struct {
		p    job.InsertParams
		hash string
		id   uuid.UUID
	}
	rows := make([]pending, len(params))
	for i := range params {
		p := params[i] // Normalize fills defaults in place: not in the caller's slice
		hash, err := p.Normalize(s.maxArgs)
		if err != nil {
			if len(params) > 1 {
				err = &store.ItemError{Index: i, Err: err}
			}
			return nil, err
		}
		id, err := uuid.NewV7()
		if err != nil {
			return nil, errorf("sqlite: insert: new id: %w", err)
		}
		rows[i] = pending{p: p, hash: hash, id: id}
	}

	var wake *wakeups
	results := make([]store.InsertResult, len(rows))
	err := s.jobsTx(ctx, func(tx *jobWrite) error {
		wake = newWakeups(tx.now, s.counted)
		ins, err := tx.PrepareContext(ctx, jobInsertSQL)
		if err != nil {
			return err
		}
		defer ins.Close()

		for i, r := range rows {
			runAt := tx.now
			if !r.p.RunAt.IsZero() {
				runAt = r.p.RunAt.UnixMicro()
			}
			j, err := scanJob(ins.QueryRowContext(ctx,
				sql.Named("id", r.id.String()),
				sql.Named("queue", r.p.Queue),
				sql.Named("kind", r.p.Kind),
				sql.Named("args", string(r.p.Args)),
				sql.Named("priority", *r.p.Priority),
				sql.Named("run_at", runAt),
				sql.Named("max_attempts", r.p.MaxAttempts),
				sql.Named("lease_ttl_us", r.p.LeaseTTL.Microseconds()),
				sql.Named("lock_key", r.p.LockKey),
				sql.Named("partition_key", r.p.PartitionKey),
				sql.Named("idempotency_key", r.p.IdempotencyKey),
				sql.Named("args_hash", r.hash),
				sql.Named("requires", listJSON(r.p.Requires)),
				sql.Named("prefers", listJSON(r.p.Prefers)),
				sql.Named("trace_parent", r.p.TraceParent),
				sql.Named("timeout_us", nullMicros(r.p.Timeout)),
				sql.Named("schedule", r.p.Schedule),
				sql.Named("scheduled_for", microOf(r.p.ScheduledFor)),
				sql.Named("callback_url", r.p.CallbackURL),
				sql.Named("idempotency_fingerprint", r.p.IdempotencyFingerprint),
				sql.Named("now", tx.now),
				sql.Named("stamp", tx.stamp),
			))
			if errors.Is(err, job.ErrNotFound) {
				// Nothing inserted: a unique index matched. We hold the
				// write lock, so the job that matched is still there.
				j, err = existing(ctx, tx.Tx, &r.p, r.hash)
				if err != nil {
					if len(rows) > 1 {
						err = &store.ItemError{Index: i, Err: err}
					}
					return err
				}
				results[i] = store.InsertResult{Job: j}
				continue
			}
			if err != nil {
				return fmt.Errorf("insert job: %w", err)
			}
			wake.inserted(j.Queue, j.Priority, runAt)
			results[i] = store.InsertResult{Job: j, Created: true}
		}
		return nil
	})
	if err != nil {
		return nil, errorf("sqlite: insert jobs: %w", err)
	}
	s.send(wake)
	return results, nil
}

// existing returns the job that kept the insert of p from happening: the
// one with its idempotency key, held to p's request (store.CheckTwin),
// else the active one with the args hash.
func existing(ctx context.Context, tx *sql.Tx, p *job.InsertParams, argsHash string) (*job.Job, error) {
	if p.IdempotencyKey != "" {
		var fingerprint sql.NullString
		j, err := scanJob(prefixed{tx.QueryRowContext(ctx, jobByIdempotencyKeySQL, p.IdempotencyKey), &fingerprint})
		if err == nil {
			err = store.CheckTwin(p, j, fingerprint.String)
		}
		if err == nil || !errors.Is(err, job.ErrNotFound) {
			return j, err
		}
	}
	if argsHash != "" {
		j, err := scanJob(tx.QueryRowContext(ctx, jobActiveTwinSQL, argsHash))
		if err == nil || !errors.Is(err, job.ErrNotFound) {
			return j, err
		}
	}
	return nil, errors.New("insert conflicted, but no job has its idempotency key or args hash")
}

// prefixed scans a row whose first column is read into first, the rest
// by the scanner's caller.
type prefixed struct {
	sc    scanner
	first any
}

func (p prefixed) Scan(dest ...any) error { return p.sc.Scan(append([]any{p.first}, dest...)...) }
