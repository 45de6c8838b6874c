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

// processTaskFinish is ProcessTaskFinish in the transaction s runs in: a
// composition of the fence (the task's checkpoint), the process's row and
// history, and the timer's jobs (JobInsertMany, cancelTimer).
func (s *executor) processTaskFinish(ctx context.Context, r store.ProcessTaskResult) (*store.Process, error) {
	tx, err := s.jobWrite(ctx)
	if err != nil {
		return nil, err
	}
	res, err := tx.ExecContext(ctx, leaseCheckpointSQL,
		sql.Named("id", r.Lease.ID.String()),
		sql.Named("token", r.Lease.Token.String()),
		sql.Named("owner", r.Lease.Owner),
		sql.Named("checkpoint", nullJSON(r.Outcome)),
		sql.Named("now", tx.now),
		sql.Named("stamp", tx.stamp),
	)
	if err != nil {
		return nil, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		if err == nil {
			err = job.ErrLeaseLost
		}
		return nil, err
	}
	key := []any{sql.Named("namespace", r.Namespace), sql.Named("id", r.ID)}
	var p *store.Process
	if r.Create {
		p, err = scanProcess(tx.QueryRowContext(ctx, processCreateSQL, append(key, sql.Named("now", tx.now))...))
		if errors.Is(err, job.ErrNotFound) {
			return nil, fmt.Errorf("process exists: %w", job.ErrDuplicate)
		}
	} else {
		// The transaction holds the database's write lock: no lock needed.
		p, err = scanProcess(tx.QueryRowContext(ctx, processGetSQL, key...))
	}
	if err != nil {
		return nil, err
	}
	cancelOld := r.Remove || r.UnsetTimer || r.SetTimer != nil || r.Status == store.ProcessError
	if cancelOld && p.TimerJob != uuid.Nil {
		if err := cancelTimer(ctx, tx, p.TimerJob); err != nil {
			return nil, err
		}
		p.TimerJob, p.TimerAt = uuid.Nil, nil
	}
	if r.Remove {
		if _, err := tx.ExecContext(ctx, processDeleteSQL, key...); err != nil {
			return nil, fmt.Errorf("remove: %w", err)
		}
		if _, err := tx.ExecContext(ctx, processEventsDeleteSQL, key...); err != nil {
			return nil, fmt.Errorf("remove: %w", err)
		}
		return nil, nil
	}
	if r.SetTimer != nil && r.Status != store.ProcessError {
		res, err := s.JobInsertMany(ctx, []job.InsertParams{*r.SetTimer})
		if err != nil {
			return nil, fmt.Errorf("set timer: %w", err)
		}
		t := res[0].Job
		p.TimerJob, p.TimerAt = t.ID, &t.RunAt
	}
	for i, e := range r.Events {
		_, err := tx.ExecContext(ctx, processEventInsertSQL, append(key,
			sql.Named("event_id", p.LastEventID+int64(i)+1),
			sql.Named("now", tx.now),
			sql.Named("payload", nullJSON(e)))...)
		if err != nil {
			return nil, fmt.Errorf("append events: %w", err)
		}
	}
	var timerAt, timerJob any
	if p.TimerJob != uuid.Nil {
		timerAt, timerJob = p.TimerAt.UnixMicro(), p.TimerJob.String()
	}
	p, err = scanProcess(tx.QueryRowContext(ctx, processUpdateSQL, append(key,
		sql.Named("status", string(r.Status)),
		sql.Named("detail", r.Detail),
		sql.Named("aux_state", nullJSON(r.AuxState)),
		sql.Named("metadata", nullJSON(r.Metadata)),
		sql.Named("events", len(r.Events)),
		sql.Named("timer_at", timerAt),
		sql.Named("timer_job", timerJob),
		sql.Named("now", tx.now))...))
	if err != nil {
		return nil, fmt.Errorf("update: %w", err)
	}
	return p, nil
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
