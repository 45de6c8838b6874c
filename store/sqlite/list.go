package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// JobGet returns one job, or job.ErrNotFound.
func (s *executor) JobGet(ctx context.Context, id uuid.UUID) (*job.Job, error) {
	q, err := s.reader(ctx)
	if err != nil {
		return nil, errorf("sqlite: get job %s: %w", id, err)
	}
	j, err := scanJob(q.QueryRowContext(ctx, jobGetSQL, id.String()))
	if err != nil {
		return nil, errorf("sqlite: get job %s: %w", id, err)
	}
	return j, nil
}

// noCursor sorts after every id, which is lowercase hex and dashes: the
// newest-first list starts below it.
const noCursor = "~"

// JobList returns one page of the jobs matching params and the number of
// all matches, both read from one snapshot. The feed (UpdatedSince) is
// exact without more: write transactions stamp updated_at strictly
// increasing in commit order (see jobWrite), so nothing can commit behind
// the last row of a snapshot.
func (s *executor) JobList(ctx context.Context, params store.ListParams) (*store.ListResult, error) {
	if params.Limit < 0 {
		return nil, job.Invalid("limit", "must be >= 0, got %d", params.Limit)
	}
	if err := store.CheckScan(params); err != nil {
		return nil, err
	}
	states := ""
	if len(params.States) > 0 {
		for _, st := range params.States {
			if !st.Valid() {
				return nil, job.Invalid("state", "unknown state %q", st)
			}
		}
		b, err := json.Marshal(params.States)
		if err != nil {
			return nil, errorf("sqlite: list jobs: %w", err)
		}
		states = string(b)
	}
	filters := []any{
		sql.Named("queue", params.Queue),
		sql.Named("kind", params.Kind),
		sql.Named("states", states),
		sql.Named("lock_key", params.LockKey),
		sql.Named("partition_key", params.PartitionKey),
		sql.Named("idempotency_key", params.IdempotencyKey),
	}
	queues, err := queuesIn(params.QueuesIn)
	if err != nil {
		return nil, errorf("sqlite: list jobs: %w", err)
	}
	filters = append(filters, queues...)
	countQuery, query := jobCountSQL, jobListNewestSQL
	var page []any
	var afterArg sql.NamedArg // the newest-first and oldest-first cursor
	lowAt := -1               // the index of :low in page
	if params.UpdatedSince != nil {
		countQuery, query = jobCountFeedSQL, jobListFeedSQL
		since := params.UpdatedSince.UnixMicro()
		filters = append(filters, sql.Named("since", since))
		afterAt, afterID := since, ""
		if params.After != nil {
			afterAt, afterID = params.After.UpdatedAt.UnixMicro(), params.After.ID.String()
		}
		page = append(page, sql.Named("after_at", afterAt), sql.Named("after_id", afterID))
	} else {
		after := noCursor
		if params.OldestFirst {
			// '' sorts before every id: the oldest-first list starts above it.
			query, after = jobListOldestSQL, ""
		}
		if params.After != nil {
			after = params.After.ID.String()
		}
		afterArg = sql.Named("after", after)
		page = append(page, afterArg)
		if !params.OldestFirst {
			lowAt = len(page) // set by a bounded scan below
			page = append(page, sql.Named("low", ""))
		}
	}
	page = append(page, sql.Named("limit", params.Limit))

	res := &store.ListResult{Jobs: []*job.Job{}}
	err = s.readTx(ctx, func(tx *sql.Tx) error {
		if params.NoTotal {
			res.Total = -1
		} else if err := tx.QueryRowContext(ctx, countQuery, filters...).Scan(&res.Total); err != nil {
			return err
		}
		if params.Limit == 0 {
			return nil
		}
		var low sql.NullString // not valid: no bound
		if store.ScanBounded(params) {
			// In the page's snapshot: the page is fenced by exactly the
			// bound it reports.
			err := tx.QueryRowContext(ctx, jobScanBoundSQL, afterArg, sql.Named("scan", params.ScanLimit)).Scan(&low)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("scan bound: %w", err)
			}
			if low.Valid {
				page[lowAt] = sql.Named("low", low.String)
			}
		}
		rows, err := tx.QueryContext(ctx, query, append(filters, page...)...)
		if err != nil {
			return err
		}
		jobs, err := scanJobs(rows)
		if err != nil {
			return err
		}
		if jobs != nil {
			res.Jobs = jobs
		}
		if low.Valid && len(res.Jobs) < params.Limit {
			id, err := uuid.Parse(low.String)
			if err != nil {
				return fmt.Errorf("scan bound %q: %w", low.String, err)
			}
			res.ScannedTo = &id
		}
		return nil
	})
	if err != nil {
		return nil, errorf("sqlite: list jobs: %w", err)
	}
	return res, nil
}

// queuesIn returns the named parameters of a list's queue limit
// (:queues_limited, :queue_names, :queue_prefixes; the lists JSON arrays).
func queuesIn(p job.QueuePatterns) ([]any, error) {
	names, prefixes := p.Split()
	list := func(v []string) (string, error) {
		if v == nil {
			v = []string{}
		}
		b, err := json.Marshal(v)
		return string(b), err
	}
	n, err := list(names)
	if err != nil {
		return nil, err
	}
	pre, err := list(prefixes)
	if err != nil {
		return nil, err
	}
	return []any{sql.Named("queues_limited", p.Limited()), sql.Named("queue_names", n), sql.Named("queue_prefixes", pre)}, nil
}
