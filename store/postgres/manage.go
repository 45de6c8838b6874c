package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"jobd/job"
)

// JobCancel cancels a queued job or asks a running one to stop. See
// store.Store.
func (s *Store) JobCancel(ctx context.Context, id uuid.UUID) (*job.Job, error) {
	j, err := s.changeOne(ctx, cancelSQL, id)
	if err != nil {
		return nil, fmt.Errorf("postgres: cancel job %s: %w", id, err)
	}
	return j, nil
}

// JobRetry puts a failed or canceled job back to queued. See store.Store.
func (s *Store) JobRetry(ctx context.Context, id uuid.UUID) (*job.Job, error) {
	j, err := s.changeOne(ctx, retrySQL, id)
	if uniqueViolation(err, "jobd_jobs_active") {
		err = job.ErrDuplicate
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: retry job %s: %w", id, err)
	}
	return j, nil
}

// changeOne runs an operator's transition on one job: a statement that
// returns the job with changed = true, or unchanged with changed = false
// when it is in the wrong state, or no row when there is no such job.
func (s *Store) changeOne(ctx context.Context, sql string, id uuid.UUID) (*job.Job, error) {
	var changed bool
	var r jobRow
	err := s.pool.QueryRow(ctx, sql, s.now(), pgUUID(id)).Scan(append([]any{&changed}, r.dest()...)...)
	if err != nil {
		return nil, notFound(err)
	}
	if !changed {
		return nil, job.ErrWrongState
	}
	return r.job()
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
