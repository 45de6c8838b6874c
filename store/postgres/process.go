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

// processTaskFinish is ProcessTaskFinish in the transaction s runs in: a
// composition of the fence (the task's checkpoint), the process's row
// and history, and the timer's jobs (JobInsertMany, cancelTimer).
func (s *executor) processTaskFinish(ctx context.Context, r store.ProcessTaskResult) (*store.Process, error) {
	tx := s.tx
	// The fence first: it locks the task's job row, so nothing below runs
	// for a task whose lease is gone.
	var cancelRequested bool // the task's executor learns a cancel otherwise
	err := tx.QueryRow(ctx, checkpointSQL, s.now(), r.Lease.ID, r.Lease.Token, nullJSONArg(r.Outcome), r.Lease.Owner).Scan(&cancelRequested)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, job.ErrLeaseLost
	}
	if err != nil {
		return nil, err
	}
	var p *store.Process
	if r.Create {
		p, err = scanProcess(tx.QueryRow(ctx, processCreateSQL, s.now(), r.Namespace, r.ID))
		if errors.Is(err, job.ErrNotFound) {
			return nil, fmt.Errorf("process exists: %w", job.ErrDuplicate)
		}
	} else {
		p, err = scanProcess(tx.QueryRow(ctx, processLockSQL, r.Namespace, r.ID))
	}
	if err != nil {
		return nil, err
	}
	cancelOld := r.Remove || r.UnsetTimer || r.SetTimer != nil || r.Status == store.ProcessError
	if cancelOld && p.TimerJob != uuid.Nil {
		if err := s.cancelTimer(ctx, p.TimerJob); err != nil {
			return nil, fmt.Errorf("cancel timer: %w", err)
		}
		p.TimerJob, p.TimerAt = uuid.Nil, nil
	}
	if r.Remove {
		var ignored *string
		if err := tx.QueryRow(ctx, processDeleteSQL, r.Namespace, r.ID).Scan(&ignored); err != nil {
			return nil, fmt.Errorf("remove: %w", err)
		}
		return nil, nil
	}
	if r.SetTimer != nil && r.Status != store.ProcessError {
		res, err := s.JobInsertMany(ctx, []job.InsertParams{*r.SetTimer})
		if err != nil {
			return nil, fmt.Errorf("set timer: %w", err)
		}
		timer := res[0].Job
		p.TimerJob, p.TimerAt = timer.ID, &timer.RunAt
	}
	if len(r.Events) > 0 {
		payloads := make([]string, len(r.Events))
		for i, e := range r.Events {
			payloads[i] = string(e)
		}
		if _, err := tx.Exec(ctx, processEventsInsertSQL, s.now(), r.Namespace, r.ID, p.LastEventID, payloads); err != nil {
			return nil, fmt.Errorf("append events: %w", err)
		}
	}
	var timerJob *uuid.UUID
	if p.TimerJob != uuid.Nil {
		timerJob = &p.TimerJob
	}
	p, err = scanProcess(tx.QueryRow(ctx, processUpdateSQL, s.now(), r.Namespace, r.ID,
		string(r.Status), r.Detail, nullJSONArg(r.AuxState), nullJSONArg(r.Metadata),
		len(r.Events), p.TimerAt, timerJob))
	if err != nil {
		return nil, fmt.Errorf("update: %w", err)
	}
	return p, nil
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
