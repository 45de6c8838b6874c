package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// JobGet returns one job, or job.ErrNotFound.
func (s *executor) JobGet(ctx context.Context, id uuid.UUID) (*job.Job, error) {
	j, err := scanJob(s.db.QueryRow(ctx, jobGetSQL, pgUUID(id)))
	if err != nil {
		return nil, errorf("postgres: get job %s: %w", id, notFound(err))
	}
	return j, nil
}

// JobList returns a page of jobs and the total count of matches, in one
// round trip; a feed page (UpdatedSince) with the real clock reads its
// horizon first, in one more. See store.Store.
func (s *executor) JobList(ctx context.Context, params store.ListParams) (*store.ListResult, error) {
	if err := store.CheckScan(params); err != nil {
		return nil, err
	}
	var states []string // nil: any state
	for _, st := range params.States {
		states = append(states, string(st))
	}
	// args are the filters every statement takes first, then extra.
	args := func(extra ...any) []any {
		return append([]any{nullText(params.Queue), nullText(params.Kind), states,
			nullText(params.LockKey), nullText(params.PartitionKey)}, extra...)
	}

	idem := nullText(params.IdempotencyKey)
	// The caller's queues: every statement's last two parameters.
	names, prefixes := queuesIn(params.QueuesIn)
	// A bounded scan reads its bound first, in a round trip of its own:
	// the page is then fenced by exactly the bound it reports.
	var low *[16]byte // nil: no bound
	if store.ScanBounded(params) {
		var after *[16]byte
		if params.After != nil {
			id := pgUUID(params.After.ID)
			after = &id
		}
		var id [16]byte
		switch err := s.db.QueryRow(ctx, jobScanBoundSQL, after, params.ScanLimit).Scan(&id); {
		case err == nil:
			low = &id
		case !errors.Is(err, pgx.ErrNoRows):
			return nil, errorf("postgres: list jobs: scan bound: %w", err)
		}
	}
	var batch pgx.Batch
	if !params.NoTotal {
		batch.Queue(jobCountSQL, args(params.UpdatedSince, idem, names, prefixes)...)
	}
	if params.Limit > 0 {
		switch {
		case params.UpdatedSince != nil:
			afterAt, afterID := *params.UpdatedSince, uuid.Nil
			if params.After != nil {
				afterAt, afterID = params.After.UpdatedAt, params.After.ID
			}
			horizon, err := s.feedHorizon(ctx)
			if err != nil {
				return nil, errorf("postgres: list jobs: %w", err)
			}
			batch.Queue(jobFeedSQL, args(*params.UpdatedSince, afterAt, pgUUID(afterID), params.Limit, horizon, idem, names, prefixes)...)
		default:
			var after *[16]byte
			if params.After != nil {
				id := pgUUID(params.After.ID)
				after = &id
			}
			if params.OldestFirst {
				batch.Queue(jobListOldestSQL, args(after, params.Limit, idem, names, prefixes)...)
			} else {
				batch.Queue(jobListSQL, args(after, params.Limit, idem, low, names, prefixes)...)
			}
		}
	}
	res := &store.ListResult{Total: -1}
	if batch.Len() == 0 {
		return &store.ListResult{Jobs: []*job.Job{}, Total: -1}, nil
	}
	br := s.db.SendBatch(ctx, &batch)
	defer br.Close()
	if !params.NoTotal {
		if err := br.QueryRow().Scan(&res.Total); err != nil {
			return nil, errorf("postgres: count jobs: %w", err)
		}
	}
	if params.Limit > 0 {
		rows, err := br.Query()
		if err != nil {
			return nil, errorf("postgres: list jobs: %w", err)
		}
		if res.Jobs, err = scanJobs(rows); err != nil {
			return nil, errorf("postgres: list jobs: %w", err)
		}
	}
	if err := br.Close(); err != nil {
		return nil, errorf("postgres: list jobs: %w", err)
	}
	if res.Jobs == nil {
		res.Jobs = []*job.Job{}
	}
	if low != nil && len(res.Jobs) < params.Limit {
		id := uuid.UUID(*low)
		res.ScannedTo = &id
	}
	return res, nil
}

// feedHorizon returns the instant below which a feed page may return
// rows, read in a statement of its own before the page's, so that the
// page's snapshot is the later one (see feed_horizon.sql). With another
// clock than the real one it returns nil: updated_at is then the clock's
// time, not a transaction's start, which no horizon can bound, so the
// feed is exact only on the real clock.
//
// Limits: a transaction left open on the database, by jobd or by any
// session of its role (an idle-in-transaction client of WithTx, say),
// holds the feed back until it ends; a transaction of another role is not
// seen at all without pg_read_all_stats, so jobs it writes may be missed
// by a reader whose cursor passed them meanwhile. A backend between
// receiving its first statement and publishing its transaction start is
// not seen either, a window of microseconds.
func (s *executor) feedHorizon(ctx context.Context) (*time.Time, error) {
	if !s.dbClock {
		return nil, nil
	}
	var h time.Time
	if err := s.db.QueryRow(ctx, feedHorizonSQL).Scan(&h); err != nil {
		return nil, fmt.Errorf("feed horizon: %w", err)
	}
	return &h, nil
}

// JobEvents returns a job's journal, oldest first, rendered from its row
// (job.Journal); an unknown job has none.
func (s *executor) JobEvents(ctx context.Context, id uuid.UUID) ([]job.Event, error) {
	var (
		j       job.Job
		state   string
		journal []byte
	)
	err := s.db.QueryRow(ctx, jobEventsSQL, pgUUID(id)).Scan(uuidDest(&j.ID), &state, &j.Attempt, &j.LeaseOwner,
		&j.CreatedAt, &j.AttemptedAt, &j.FinishedAt, &journal, &j.Dependencies)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, errorf("postgres: events of job %s: %w", id, err)
	}
	j.State = job.State(state)
	stored, err := job.ParseJournal(journal)
	if err != nil {
		return nil, errorf("postgres: events of job %s: %w", id, err)
	}
	return job.Journal(&j, stored), nil
}

// queuesIn returns the parameters of a list's queue limit: the names
// (nil, which is NULL, for no limit) and the prefixes (never NULL).
func queuesIn(p job.QueuePatterns) (names, prefixes []string) {
	names, prefixes = p.Split()
	if !p.Limited() {
		return nil, []string{}
	}
	if names == nil {
		names = []string{}
	}
	if prefixes == nil {
		prefixes = []string{}
	}
	return names, prefixes
}
