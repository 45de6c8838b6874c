package sqlite

import (
	"context"
	"database/sql"
	_ "embed" // the process queries
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var (
	//go:embed sql/process_get.sql
	processGetSQL string
	//go:embed sql/process_create.sql
	processCreateSQL string
	//go:embed sql/process_update.sql
	processUpdateSQL string
	//go:embed sql/process_event_insert.sql
	processEventInsertSQL string
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
	//go:embed sql/process_events_delete.sql
	processEventsDeleteSQL string
)

// ProcessGet returns a process and a page of its history. See store.Store.
func (s *executor) ProcessGet(ctx context.Context, namespace, id string, page store.HistoryPage) (*store.Process, error) {
	var p *store.Process
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		var err error
		p, err = scanProcess(tx.QueryRowContext(ctx, processGetSQL, sql.Named("namespace", namespace), sql.Named("id", id)))
		if err != nil || page.Limit <= 0 {
			return err
		}
		q, args := processEventsAfterSQL, []any{sql.Named("after", page.After)}
		if page.After < 0 {
			q, args = processEventsLastSQL, nil
		}
		args = append(args, sql.Named("namespace", namespace), sql.Named("id", id), sql.Named("limit", page.Limit))
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				e       store.ProcessEvent
				at      int64
				payload sql.NullString
			)
			if err := rows.Scan(&e.EventID, &at, &payload); err != nil {
				return err
			}
			e.At = time.UnixMicro(at).UTC()
			if payload.Valid {
				e.Payload = json.RawMessage(payload.String)
			}
			p.History = append(p.History, e)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, errorf("sqlite: get process %s/%s: %w", namespace, id, err)
	}
	return p, nil
}

// ProcessList returns a page of a namespace's processes. See store.Store.
func (s *executor) ProcessList(ctx context.Context, params store.ProcessListParams) ([]store.Process, int64, error) {
	var (
		out   []store.Process
		total int64
	)
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		ns, status := sql.Named("namespace", params.Namespace), sql.Named("status", string(params.Status))
		if err := tx.QueryRowContext(ctx, processCountSQL, ns, status).Scan(&total); err != nil {
			return err
		}
		if params.Limit <= 0 {
			return nil
		}
		rows, err := tx.QueryContext(ctx, processListSQL, ns, status,
			sql.Named("after", params.After), sql.Named("limit", params.Limit))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			p, err := scanProcess(rows)
			if err != nil {
				return err
			}
			out = append(out, *p)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, 0, errorf("sqlite: list processes: %w", err)
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
		return nil, errorf("sqlite: finish task of process %s/%s: %w", r.Namespace, r.ID, err)
	}
	return p, nil
}

// processTaskFinish is ProcessTaskFinish in the transaction s runs in:
// store.FinishProcessTask decides, over this driver's statements.
func (s *executor) processTaskFinish(ctx context.Context, r store.ProcessTaskResult) (*store.Process, error) {
	tx, err := s.jobWrite(ctx)
	if err != nil {
		return nil, err
	}
	return store.FinishProcessTask(ctx, processSteps{s: s, tx: tx}, r)
}

// processSteps are the statements of a task's finish
// (store.ProcessTaskSteps) in the write transaction tx. The transaction
// holds the database's write lock: no row needs locking.
type processSteps struct {
	s  *executor
	tx *jobWrite
}

func processKey(ns, id string) []any {
	return []any{sql.Named("namespace", ns), sql.Named("id", id)}
}

func (p processSteps) FenceTask(ctx context.Context, lease store.Lease, outcome json.RawMessage) error {
	res, err := p.tx.ExecContext(ctx, leaseCheckpointSQL,
		sql.Named("id", lease.ID.String()),
		sql.Named("token", lease.Token.String()),
		sql.Named("owner", lease.Owner),
		sql.Named("checkpoint", nullJSON(outcome)),
		sql.Named("now", p.tx.now),
		sql.Named("stamp", p.tx.stamp),
	)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		if err == nil {
			err = job.ErrLeaseLost
		}
		return err
	}
	return nil
}

func (p processSteps) CreateProcess(ctx context.Context, ns, id string) (*store.Process, error) {
	return scanProcess(p.tx.QueryRowContext(ctx, processCreateSQL, append(processKey(ns, id), sql.Named("now", p.tx.now))...))
}

func (p processSteps) LockProcess(ctx context.Context, ns, id string) (*store.Process, error) {
	return scanProcess(p.tx.QueryRowContext(ctx, processGetSQL, processKey(ns, id)...))
}

func (p processSteps) CancelQueuedJob(ctx context.Context, id uuid.UUID) error {
	return cancelTimer(ctx, p.tx, id)
}

func (p processSteps) DeleteProcess(ctx context.Context, ns, id string) error {
	if _, err := p.tx.ExecContext(ctx, processDeleteSQL, processKey(ns, id)...); err != nil {
		return err
	}
	_, err := p.tx.ExecContext(ctx, processEventsDeleteSQL, processKey(ns, id)...)
	return err
}

func (p processSteps) InsertJob(ctx context.Context, params job.InsertParams) (*job.Job, error) {
	res, err := p.s.JobInsertMany(ctx, []job.InsertParams{params})
	if err != nil {
		return nil, err
	}
	return res[0].Job, nil
}

func (p processSteps) AppendProcessEvents(ctx context.Context, ns, id string, after int64, events []json.RawMessage) error {
	for i, e := range events {
		_, err := p.tx.ExecContext(ctx, processEventInsertSQL, append(processKey(ns, id),
			sql.Named("event_id", after+int64(i)+1),
			sql.Named("now", p.tx.now),
			sql.Named("payload", nullJSON(e)))...)
		if err != nil {
			return err
		}
	}
	return nil
}

func (p processSteps) UpdateProcess(ctx context.Context, ns, id string, u store.ProcessUpdate) (*store.Process, error) {
	var timerAt, timerJob any
	if u.TimerJob != uuid.Nil {
		timerAt, timerJob = u.TimerAt.UnixMicro(), u.TimerJob.String()
	}
	return scanProcess(p.tx.QueryRowContext(ctx, processUpdateSQL, append(processKey(ns, id),
		sql.Named("status", string(u.Status)),
		sql.Named("detail", u.Detail),
		sql.Named("aux_state", nullJSON(u.AuxState)),
		sql.Named("metadata", nullJSON(u.Metadata)),
		sql.Named("events", u.Events),
		sql.Named("timer_at", timerAt),
		sql.Named("timer_job", timerJob),
		sql.Named("now", p.tx.now))...))
}

// cancelTimer cancels a process's replaced timer job if it is still
// queued (job.Cancel). One that already runs is the task doing the
// replacing (the process's lock_key lets no other run), so it is left to
// finish; one already gone (pruned) is nothing to cancel.
func cancelTimer(ctx context.Context, tx *jobWrite, id uuid.UUID) error {
	cur, err := scanJob(tx.QueryRowContext(ctx, jobGetSQL, id.String()))
	if errors.Is(err, job.ErrNotFound) {
		return nil
	}
	if err != nil || cur.State != job.StateQueued {
		return err
	}
	t, _, err := job.Cancel(job.FactsOf(cur), fromMicro(tx.now))
	if err != nil {
		return err
	}
	_, err = setState(ctx, tx, cur, t)
	return err
}

// ProcessDelete deletes a process, its history and its queued timer. See
// store.Store.
func (s *executor) ProcessDelete(ctx context.Context, namespace, id string) error {
	err := s.jobsTx(ctx, func(tx *jobWrite) error {
		key := []any{sql.Named("namespace", namespace), sql.Named("id", id)}
		var timer sql.NullString
		err := tx.QueryRowContext(ctx, processDeleteSQL, key...).Scan(&timer)
		if errors.Is(err, sql.ErrNoRows) {
			return job.ErrNotFound
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, processEventsDeleteSQL, key...); err != nil {
			return err
		}
		if !timer.Valid {
			return nil
		}
		tid, err := uuid.Parse(timer.String)
		if err != nil {
			return fmt.Errorf("timer_job: %w", err)
		}
		return cancelTimer(ctx, tx, tid)
	})
	if err != nil {
		return errorf("sqlite: delete process %s/%s: %w", namespace, id, err)
	}
	return nil
}

func scanProcess(row scanner) (*store.Process, error) {
	var (
		p                  store.Process
		status             string
		aux, meta, timerID sql.NullString
		timerAt            sql.NullInt64
		created, updated   int64
	)
	err := row.Scan(&p.Namespace, &p.ID, &status, &p.Detail, &aux, &meta, &timerAt, &timerID,
		&p.LastEventID, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, job.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	p.Status = store.ProcessStatus(status)
	if aux.Valid {
		p.AuxState = json.RawMessage(aux.String)
	}
	if meta.Valid {
		p.Metadata = json.RawMessage(meta.String)
	}
	if timerAt.Valid {
		t := time.UnixMicro(timerAt.Int64).UTC()
		p.TimerAt = &t
	}
	if timerID.Valid {
		if p.TimerJob, err = uuid.Parse(timerID.String); err != nil {
			return nil, fmt.Errorf("timer_job: %w", err)
		}
	}
	p.CreatedAt, p.UpdatedAt = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	return &p, nil
}
