package postgres

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"jobd/job"
	"jobd/store"
)

// JobGet returns one job, or job.ErrNotFound.
func (s *Store) JobGet(ctx context.Context, id uuid.UUID) (*job.Job, error) {
	j, err := scanJob(s.pool.QueryRow(ctx, jobGetSQL, pgUUID(id)))
	if err != nil {
		return nil, fmt.Errorf("postgres: get job %s: %w", id, notFound(err))
	}
	return j, nil
}

// JobList returns a page of jobs and the total count of matches, in one
// round trip. See store.Store.
func (s *Store) JobList(ctx context.Context, params store.ListParams) (*store.ListResult, error) {
	var states []string // nil: any state
	for _, st := range params.States {
		states = append(states, string(st))
	}
	// args are the filters every statement takes first, then extra.
	args := func(extra ...any) []any {
		return append([]any{nullText(params.Queue), nullText(params.Kind), states,
			nullText(params.LockKey), nullText(params.PartitionKey)}, extra...)
	}

	var batch pgx.Batch
	batch.Queue(jobCountSQL, args(params.UpdatedSince)...)
	if params.Limit > 0 {
		switch {
		case params.UpdatedSince != nil:
			afterAt, afterID := *params.UpdatedSince, uuid.Nil
			if params.After != nil {
				afterAt, afterID = params.After.UpdatedAt, params.After.ID
			}
			batch.Queue(jobFeedSQL, args(*params.UpdatedSince, afterAt, pgUUID(afterID), params.Limit)...)
		default:
			var after *[16]byte
			if params.After != nil {
				id := pgUUID(params.After.ID)
				after = &id
			}
			batch.Queue(jobListSQL, args(after, params.Limit)...)
		}
	}
	res := &store.ListResult{}
	br := s.pool.SendBatch(ctx, &batch)
	defer br.Close()
	if err := br.QueryRow().Scan(&res.Total); err != nil {
		return nil, fmt.Errorf("postgres: count jobs: %w", err)
	}
	if params.Limit > 0 {
		rows, err := br.Query()
		if err != nil {
			return nil, fmt.Errorf("postgres: list jobs: %w", err)
		}
		if res.Jobs, err = scanJobs(rows); err != nil {
			return nil, fmt.Errorf("postgres: list jobs: %w", err)
		}
	}
	if err := br.Close(); err != nil {
		return nil, fmt.Errorf("postgres: list jobs: %w", err)
	}
	if res.Jobs == nil {
		res.Jobs = []*job.Job{}
	}
	return res, nil
}

// JobEvents returns a job's journal, oldest first.
func (s *Store) JobEvents(ctx context.Context, id uuid.UUID) ([]job.Event, error) {
	rows, err := s.pool.Query(ctx, jobEventsSQL, pgUUID(id))
	if err != nil {
		return nil, fmt.Errorf("postgres: events of job %s: %w", id, err)
	}
	events, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (job.Event, error) {
		var e job.Event
		var kind string
		err := row.Scan(&e.ID, uuidDest(&e.JobID), &e.At, &kind, &e.Attempt, &e.Detail)
		e.Kind = job.EventKind(kind)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: events of job %s: %w", id, err)
	}
	return events, nil
}
