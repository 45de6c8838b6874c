package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
)

// JobCancel cancels a queued job or asks a running one to stop; a
// repeated cancel of a running job returns it and writes nothing. See
// store.Store.
func (s *Store) JobCancel(ctx context.Context, id uuid.UUID) (*job.Job, error) {
	j, changed, err := s.changeOne(ctx, cancelSQL, id, func(j *job.Job) bool {
		return j.State == job.StateQueued || (j.State == job.StateRunning && !j.CancelRequested)
	})
	if err == nil && !changed && !(j.State == job.StateRunning && j.CancelRequested) {
		err = job.ErrWrongState
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: cancel job %s: %w", id, err)
	}
	return j, nil
}

// JobRetry puts a failed or canceled job back to queued. See store.Store.
func (s *Store) JobRetry(ctx context.Context, id uuid.UUID) (*job.Job, error) {
	j, changed, err := s.changeOne(ctx, retrySQL, id, func(j *job.Job) bool {
		return j.State == job.StateFailed || j.State == job.StateCanceled
	})
	if uniqueViolation(err, "jobd_jobs_active") {
		err = job.ErrDuplicate
	}
	if err == nil && !changed {
		err = job.ErrWrongState
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: retry job %s: %w", id, err)
	}
	return j, nil
}

// staleReads bounds how often changeOne runs its statement again because
// a concurrent write made the row it read stale. Each time needs another
// write to the same job in between, so a few are plenty.
const staleReads = 5

// changeOne runs an operator's transition on one job: a statement that
// returns the job with changed = true, or unchanged with changed = false
// when the transition does not apply, or no row when there is no such job.
//
// The unchanged row comes from the statement's snapshot, which may predate
// a concurrent write that the update itself waited for and then saw (READ
// COMMITTED). When that row would have matched (matches), it is stale, and
// the statement runs again, on a new snapshot.
func (s *Store) changeOne(ctx context.Context, sql string, id uuid.UUID, matches func(*job.Job) bool) (*job.Job, bool, error) {
	for try := 0; ; try++ {
		var changed bool
		var r jobRow
		err := s.pool.QueryRow(ctx, sql, s.now(), pgUUID(id)).Scan(append([]any{&changed}, r.dest()...)...)
		if err != nil {
			return nil, false, notFound(err)
		}
		j, err := r.job()
		if err != nil {
			return nil, false, err
		}
		if changed || !matches(j) || try == staleReads {
			return j, changed, nil
		}
	}
}

// JobRescue returns jobs whose lease expired to queued or failed. See
// store.Store.
func (s *Store) JobRescue(ctx context.Context, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var n int
	if err := s.pool.QueryRow(ctx, rescueSQL, s.now(), limit).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: rescue expired leases: %w", err)
	}
	return n, nil
}

// JobPrune deletes old finished jobs and their journal. See store.Store.
func (s *Store) JobPrune(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var n int
	if err := s.pool.QueryRow(ctx, pruneSQL, before, limit).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: prune finished jobs: %w", err)
	}
	return n, nil
}
