package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// WorkerCreate stores a worker and its key in one transaction: the
// worker's row, then KeyCreate of its key. See store.Store.
func (s *executor) WorkerCreate(ctx context.Context, w store.Worker, key store.APIKey) error {
	if err := store.CheckWorker(w); err != nil {
		return err
	}
	queues, err := jsonList(w.Queues)
	if err != nil {
		return errorf("sqlite: create worker %s: %w", w.ID, err)
	}
	caps := listJSON(w.Capabilities)
	if !caps.Valid {
		caps.String = "[]"
	}
	meta := string(w.Metadata)
	if meta == "" {
		meta = "{}"
	}
	key.WorkerID = w.ID
	err = s.atomically(ctx, func(ex *executor) error {
		_, err := ex.tx.sql.ExecContext(ctx, workerCreateSQL,
			sql.Named("id", w.ID), sql.Named("name", w.Name),
			sql.Named("capabilities", caps.String), sql.Named("metadata", meta),
			sql.Named("queues", queues), sql.Named("now", ex.now()),
		)
		if isUniqueViolation(err) {
			err = fmt.Errorf("id taken: %w", job.ErrDuplicate)
		}
		if err != nil {
			return err
		}
		return ex.KeyCreate(ctx, key)
	})
	if err != nil {
		return errorf("sqlite: create worker %s: %w", w.ID, err)
	}
	return nil
}

// WorkerGet returns one worker, or job.ErrNotFound.
func (s *executor) WorkerGet(ctx context.Context, id string) (*store.Worker, error) {
	q, err := s.reader(ctx)
	if err != nil {
		return nil, errorf("sqlite: get worker %s: %w", id, err)
	}
	w, err := scanWorker(q.QueryRowContext(ctx, workerGetSQL, id))
	if err != nil {
		return nil, errorf("sqlite: get worker %s: %w", id, err)
	}
	return w, nil
}

// WorkerList returns every worker, oldest first.
func (s *executor) WorkerList(ctx context.Context) ([]store.Worker, error) {
	q, err := s.reader(ctx)
	if err != nil {
		return nil, errorf("sqlite: list workers: %w", err)
	}
	rows, err := q.QueryContext(ctx, workerListSQL)
	if err != nil {
		return nil, errorf("sqlite: list workers: %w", err)
	}
	defer rows.Close()
	var ws []store.Worker
	for rows.Next() {
		w, err := scanWorker(rows)
		if err != nil {
			return nil, errorf("sqlite: list workers: %w", err)
		}
		ws = append(ws, *w)
	}
	if err := rows.Err(); err != nil {
		return nil, errorf("sqlite: list workers: %w", err)
	}
	return ws, nil
}

// WorkerSetDisabled disables or enables a worker.
func (s *executor) WorkerSetDisabled(ctx context.Context, id string, disabled bool) (*store.Worker, error) {
	err := s.writeOne(ctx, workerSetDisabledSQL,
		sql.Named("id", id), sql.Named("disabled", disabled), sql.Named("now", s.now()))
	if err != nil {
		return nil, errorf("sqlite: disable worker %s: %w", id, err)
	}
	return s.WorkerGet(ctx, id)
}

// WorkerDelete deletes a worker and its keys, in one transaction.
func (s *executor) WorkerDelete(ctx context.Context, id string) error {
	var n int64
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, workerDeleteKeysSQL, id); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, workerDeleteSQL, id)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err == nil && n == 0 {
			err = job.ErrNotFound // rolls the key deletion back: there were none
		}
		return err
	})
	if err != nil {
		return errorf("sqlite: delete worker %s: %w", id, err)
	}
	return nil
}

// WorkerSeen records a heartbeat or a claim of a worker.
func (s *executor) WorkerSeen(ctx context.Context, id string, status store.WorkerStatus, done, failed int) error {
	err := s.writeOne(ctx, workerSeenSQL,
		sql.Named("id", id), sql.Named("status", string(status)),
		sql.Named("done", done), sql.Named("failed", failed), sql.Named("now", s.now()))
	if err != nil {
		return errorf("sqlite: worker %s heartbeat: %w", id, err)
	}
	return nil
}

// WorkerMarkOffline marks offline the workers silent since cutoff, and
// records a worker.offline event for each, in one transaction.
func (s *executor) WorkerMarkOffline(ctx context.Context, cutoff time.Time) (int, error) {
	var marked []string
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		now := s.now()
		rows, err := tx.QueryContext(ctx, workerMarkOfflineSQL, sql.Named("cutoff", cutoff.UnixMicro()), sql.Named("now", now))
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			marked = append(marked, id)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil || len(marked) == 0 {
			return err
		}
		ids, err := json.Marshal(marked)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, webhookEventsOfflineSQL, sql.Named("workers", string(ids)), sql.Named("now", now))
		return err
	})
	if err != nil {
		return 0, errorf("sqlite: mark workers offline: %w", err)
	}
	return len(marked), nil
}

// writeOne runs one statement in a write transaction; job.ErrNotFound
// when it changed no row.
func (s *executor) writeOne(ctx context.Context, query string, args ...any) error {
	return s.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err == nil && n == 0 {
			err = job.ErrNotFound
		}
		return err
	})
}

func scanWorker(sc scanner) (*store.Worker, error) {
	var (
		w                   store.Worker
		caps, meta, status  string
		queues              string
		disabled            int64
		beat                sql.NullInt64
		createdAt, updateAt int64
	)
	err := sc.Scan(&w.ID, &w.Name, &caps, &meta, &status, &disabled, &beat,
		&w.JobsDone, &w.JobsFailed, &createdAt, &updateAt, &queues, &w.RunningJobs)
	if err != nil {
		return nil, notFound(err)
	}
	if w.Capabilities, err = scanList(sql.NullString{String: caps, Valid: true}); err != nil {
		return nil, fmt.Errorf("worker %s: capabilities: %w", w.ID, err)
	}
	if w.Queues, err = queuePatterns(queues); err != nil {
		return nil, fmt.Errorf("worker %s: queues: %w", w.ID, err)
	}
	w.Metadata = json.RawMessage(meta)
	w.Status = store.WorkerStatus(status)
	w.Disabled = disabled != 0
	w.LastHeartbeatAt = fromNullMicro(beat)
	w.CreatedAt = fromMicro(createdAt)
	w.UpdatedAt = fromMicro(updateAt)
	return &w, nil
}

// jsonList is list as a JSON array ('[]' when empty), as the queues
// columns hold it.
func jsonList(list []string) (string, error) {
	if list == nil {
		list = []string{}
	}
	b, err := json.Marshal(list)
	return string(b), err
}

// queuePatterns reads a queues column; nil when it lists none.
func queuePatterns(col string) (job.QueuePatterns, error) {
	var list []string
	if err := json.Unmarshal([]byte(col), &list); err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, nil
	}
	return job.QueuePatterns(list), nil
}
