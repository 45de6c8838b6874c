package postgres

import (
	"context"
	_ "embed" // the process queries
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var (
	//go:embed sql/process_get.sql
	processGetSQL string
	//go:embed sql/process_lock.sql
	processLockSQL string
	//go:embed sql/process_create.sql
	processCreateSQL string
	//go:embed sql/process_update.sql
	processUpdateSQL string
	//go:embed sql/process_events_insert.sql
	processEventsInsertSQL string
	//go:embed sql/process_events_after.sql
	processEventsAfterSQL string
	//go:embed sql/process_events_last.sql
	processEventsLastSQL string
	//go:embed sql/process_list.sql
	processListSQL string
	//go:embed sql/process_count.sql
	processCountSQL string
	//go:embed sql/process_delete.sql
	processDeleteSQL string
)

// ProcessGet returns a process and a page of its history. See store.Store.
func (s *executor) ProcessGet(ctx context.Context, namespace, id string, page store.HistoryPage) (*store.Process, error) {
	var p *store.Process
	err := s.readSnapshot(ctx, func(tx querier) error {
		var err error
		p, err = scanProcess(tx.QueryRow(ctx, processGetSQL, namespace, id))
		if err != nil {
			return err
		}
		if page.Limit <= 0 {
			return nil
		}
		var rows pgx.Rows
		if page.After < 0 {
			rows, err = tx.Query(ctx, processEventsLastSQL, namespace, id, page.Limit)
		} else {
			rows, err = tx.Query(ctx, processEventsAfterSQL, namespace, id, page.After, page.Limit)
		}
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e store.ProcessEvent
			var payload []byte
			if err := rows.Scan(&e.EventID, &e.At, &payload); err != nil {
				return err
			}
			e.Payload = payload
			p.History = append(p.History, e)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, errorf("postgres: get process %s/%s: %w", namespace, id, err)
	}
	return p, nil
}

// ProcessList returns a page of a namespace's processes. See store.Store.
func (s *executor) ProcessList(ctx context.Context, params store.ProcessListParams) ([]store.Process, int64, error) {
	var total int64
	if err := s.db.QueryRow(ctx, processCountSQL, params.Namespace, string(params.Status)).Scan(&total); err != nil {
		return nil, 0, errorf("postgres: count processes: %w", err)
	}
	if params.Limit <= 0 {
		return nil, total, nil
	}
	rows, err := s.db.Query(ctx, processListSQL, params.Namespace, string(params.Status), params.After, params.Limit)
	if err != nil {
		return nil, 0, errorf("postgres: list processes: %w", err)
	}
	defer rows.Close()
	var out []store.Process
	for rows.Next() {
		p, err := scanProcess(rows)
		if err != nil {
			return nil, 0, errorf("postgres: list processes: %w", err)
		}
		out = append(out, *p)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, errorf("postgres: list processes: %w", err)
	}
	return out, total, nil
}

// ProcessTaskFinish applies a task's result in one transaction fenced by
// its lease. See store.Store.
func (s *executor) ProcessTaskFinish(ctx context.Context, r store.ProcessTaskResult) (*store.Process, error) {
	if err := store.CheckTaskResult(r); err != nil {
		return nil, err
	}
	var p *store.Process
	err := s.atomically(ctx, func(ex *executor) error {
		var err error
		p, err = ex.processTaskFinish(ctx, r)
		return err
	})
	if err != nil {
		return nil, errorf("postgres: finish task of process %s/%s: %w", r.Namespace, r.ID, err)
	}
	return p, nil
}

// processTaskFinish is ProcessTaskFinish in the transaction s runs in:
// store.FinishProcessTask decides, over this driver's statements.
func (s *executor) processTaskFinish(ctx context.Context, r store.ProcessTaskResult) (*store.Process, error) {
	return store.FinishProcessTask(ctx, processSteps{s}, r)
}

// processSteps are the statements of a task's finish (store.ProcessTaskSteps)
// in the transaction s runs in.
type processSteps struct{ s *executor }

func (p processSteps) FenceTask(ctx context.Context, lease store.Lease, outcome json.RawMessage) error {
	// It locks the task's job row, so nothing after it runs for a task
	// whose lease is gone.
	var cancelRequested bool // the task's executor learns a cancel otherwise
	err := p.s.tx.QueryRow(ctx, checkpointSQL, p.s.now(), lease.ID, lease.Token, nullJSONArg(outcome), lease.Owner).Scan(&cancelRequested)
	if errors.Is(err, pgx.ErrNoRows) {
		return job.ErrLeaseLost
	}
	return err
}

func (p processSteps) CreateProcess(ctx context.Context, ns, id string) (*store.Process, error) {
	return scanProcess(p.s.tx.QueryRow(ctx, processCreateSQL, p.s.now(), ns, id))
}

func (p processSteps) LockProcess(ctx context.Context, ns, id string) (*store.Process, error) {
	return scanProcess(p.s.tx.QueryRow(ctx, processLockSQL, ns, id))
}

func (p processSteps) CancelQueuedJob(ctx context.Context, id uuid.UUID) error {
	return p.s.cancelTimer(ctx, id)
}

func (p processSteps) DeleteProcess(ctx context.Context, ns, id string) error {
	var timer *string
	return p.s.tx.QueryRow(ctx, processDeleteSQL, ns, id).Scan(&timer)
}

func (p processSteps) InsertJob(ctx context.Context, params job.InsertParams) (*job.Job, error) {
	res, err := p.s.JobInsertMany(ctx, []job.InsertParams{params})
	if err != nil {
		return nil, err
	}
	return res[0].Job, nil
}

func (p processSteps) AppendProcessEvents(ctx context.Context, ns, id string, after int64, events []json.RawMessage) error {
	payloads := make([]string, len(events))
	for i, e := range events {
		payloads[i] = string(e)
	}
	_, err := p.s.tx.Exec(ctx, processEventsInsertSQL, p.s.now(), ns, id, after, payloads)
	return err
}

func (p processSteps) UpdateProcess(ctx context.Context, ns, id string, u store.ProcessUpdate) (*store.Process, error) {
	var timerJob *uuid.UUID
	if u.TimerJob != uuid.Nil {
		timerJob = &u.TimerJob
	}
	return scanProcess(p.s.tx.QueryRow(ctx, processUpdateSQL, p.s.now(), ns, id,
		string(u.Status), u.Detail, nullJSONArg(u.AuxState), nullJSONArg(u.Metadata),
		u.Events, u.TimerAt, timerJob))
}

// ProcessDelete deletes a process, its history and its queued timer. See
// store.Store.
func (s *executor) ProcessDelete(ctx context.Context, namespace, id string) error {
	err := s.atomically(ctx, func(ex *executor) error {
		var timer *string
		err := ex.tx.QueryRow(ctx, processDeleteSQL, namespace, id).Scan(&timer)
		if errors.Is(err, pgx.ErrNoRows) {
			return job.ErrNotFound
		}
		if err != nil || timer == nil {
			return err
		}
		id, err := uuid.Parse(*timer)
		if err != nil {
			return fmt.Errorf("timer_job: %w", err)
		}
		return ex.cancelTimer(ctx, id)
	})
	if err != nil {
		return errorf("postgres: delete process %s/%s: %w", namespace, id, err)
	}
	return nil
}

// cancelTimer cancels, in the transaction s runs in, a process's replaced
// timer job if it is still queued (job.Cancel). A timer job that already runs is the task doing the
// replacing (the process's lock_key lets no other run), so it is left to
// finish; one already gone (pruned) is nothing to cancel.
func (s *executor) cancelTimer(ctx context.Context, id uuid.UUID) error {
	r := &rounds{q: s.tx}
	now := s.now()
	cur, at, err := lockJob(ctx, r, now, id)
	if errors.Is(err, job.ErrNotFound) {
		return nil
	}
	if err != nil || cur.State != job.StateQueued {
		return err
	}
	t, _, err := job.Cancel(job.FactsOf(cur), at)
	if err != nil {
		return err
	}
	_, err = setState(ctx, r, now, cur, t)
	return err
}

// nullJSONArg passes raw JSON, or SQL NULL when there is none.
func nullJSONArg(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	return string(raw)
}

func scanProcess(row pgx.Row) (*store.Process, error) {
	var (
		p         store.Process
		status    string
		aux, meta []byte
		timerAt   *time.Time
		timerJob  *string
	)
	err := row.Scan(&p.Namespace, &p.ID, &status, &p.Detail, &aux, &meta, &timerAt, &timerJob,
		&p.LastEventID, &p.CreatedAt, &p.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, job.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	p.Status = store.ProcessStatus(status)
	p.AuxState, p.Metadata, p.TimerAt = aux, meta, timerAt
	if timerJob != nil {
		if p.TimerJob, err = uuid.Parse(*timerJob); err != nil {
			return nil, fmt.Errorf("timer_job: %w", err)
		}
	}
	return &p, nil
}
