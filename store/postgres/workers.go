package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// WorkerCreate stores a worker and its key in one transaction: the
// worker's row, then KeyCreate of its key. See store.Store.
func (s *executor) WorkerCreate(ctx context.Context, w store.Worker, key store.APIKey) error {
	if err := store.CheckWorker(w); err != nil {
		return err
	}
	caps := w.Capabilities
	if caps == nil {
		caps = []string{}
	}
	meta := w.Metadata
	if len(meta) == 0 {
		meta = json.RawMessage(`{}`)
	}
	key.WorkerID = w.ID
	err := s.atomically(ctx, func(ex *executor) error {
		_, err := ex.tx.Exec(ctx, workerCreateSQL, ex.now(), w.ID, w.Name, caps, meta, textArray(w.Queues))
		if uniqueViolation(err, "jobd_workers_pkey") {
			err = job.ErrDuplicate
		}
		if err != nil {
			return err
		}
		return ex.KeyCreate(ctx, key)
	})
	if err != nil {
		return errorf("postgres: create worker %q: %w", w.ID, err)
	}
	return nil
}

// WorkerGet returns one worker, or job.ErrNotFound.
func (s *executor) WorkerGet(ctx context.Context, id string) (*store.Worker, error) {
	rows, err := s.db.Query(ctx, workerGetSQL, id)
	if err != nil {
		return nil, errorf("postgres: get worker %q: %w", id, err)
	}
	w, err := pgx.CollectExactlyOneRow(rows, scanWorker)
	if err != nil {
		return nil, errorf("postgres: get worker %q: %w", id, notFound(err))
	}
	return &w, nil
}

// WorkerList returns every worker, oldest first.
func (s *executor) WorkerList(ctx context.Context) ([]store.Worker, error) {
	rows, err := s.db.Query(ctx, workerListSQL)
	if err != nil {
		return nil, errorf("postgres: list workers: %w", err)
	}
	ws, err := pgx.CollectRows(rows, scanWorker)
	if err != nil {
		return nil, errorf("postgres: list workers: %w", err)
	}
	return ws, nil
}

// WorkerSetDisabled disables or enables a worker.
func (s *executor) WorkerSetDisabled(ctx context.Context, id string, disabled bool) (*store.Worker, error) {
	tag, err := s.db.Exec(ctx, workerSetDisabledSQL, s.now(), id, disabled)
	if err != nil {
		return nil, errorf("postgres: disable worker %q: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return nil, errorf("postgres: disable worker %q: %w", id, job.ErrNotFound)
	}
	return s.WorkerGet(ctx, id)
}

// WorkerDelete deletes a worker and its keys.
func (s *executor) WorkerDelete(ctx context.Context, id string) error {
	tag, err := s.db.Exec(ctx, workerDeleteSQL, id)
	if err != nil {
		return errorf("postgres: delete worker %q: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return errorf("postgres: delete worker %q: %w", id, job.ErrNotFound)
	}
	return nil
}

// WorkerSeen records a heartbeat or a claim of a worker.
func (s *executor) WorkerSeen(ctx context.Context, id string, status store.WorkerStatus, done, failed int) error {
	tag, err := s.db.Exec(ctx, workerSeenSQL, s.now(), id, string(status), done, failed)
	if err != nil {
		return errorf("postgres: worker %q heartbeat: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return errorf("postgres: worker %q heartbeat: %w", id, job.ErrNotFound)
	}
	return nil
}

// WorkerMarkOffline marks offline the workers silent since cutoff, and
// records a worker.offline event for each, in one statement.
func (s *executor) WorkerMarkOffline(ctx context.Context, cutoff time.Time) (int, error) {
	var n int
	if err := s.db.QueryRow(ctx, workerMarkOfflineSQL, s.now(), cutoff).Scan(&n); err != nil {
		return 0, errorf("postgres: mark workers offline: %w", err)
	}
	return n, nil
}

func scanWorker(row pgx.CollectableRow) (store.Worker, error) {
	var (
		w      store.Worker
		status string
		queues []string
	)
	err := row.Scan(&w.ID, &w.Name, &w.Capabilities, &w.Metadata, &status, &w.Disabled, &w.LastHeartbeatAt,
		&w.JobsDone, &w.JobsFailed, &w.CreatedAt, &w.UpdatedAt, &queues, &w.RunningJobs)
	w.Status = store.WorkerStatus(status)
	if len(w.Capabilities) == 0 {
		w.Capabilities = nil
	}
	if len(queues) > 0 {
		w.Queues = job.QueuePatterns(queues)
	}
	return w, err
}

// textArray is list as a text[] parameter: '{}', never NULL, when empty.
func textArray(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}
