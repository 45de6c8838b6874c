package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// JobCancel cancels a queued job at once or asks a running one to stop;
// job.ErrWrongState when the job is already final. Cancelling a running
// job whose cancel was already requested returns it unchanged.
func (s *Store) JobCancel(ctx context.Context, id uuid.UUID) (*job.Job, error) {
	var j *job.Job
	requested := false // this call asked a running job to stop
	err := s.jobsTx(ctx, func(tx *jobWrite) error {
		requested = false
		cur, err := scanJob(tx.QueryRowContext(ctx, jobGetSQL, id.String()))
		if err != nil {
			return err
		}
		var (
			query string
			kind  job.EventKind
		)
		switch {
		case cur.State == job.StateQueued:
			query, kind = cancelQueuedSQL, job.EventCanceled
		case cur.State == job.StateRunning && cur.CancelRequested:
			j = cur
			return nil
		case cur.State == job.StateRunning:
			query, kind = cancelRunningSQL, job.EventCancelRequested
			requested = true
		default:
			return fmt.Errorf("job is %s: %w", cur.State, job.ErrWrongState)
		}
		j, err = scanJob(tx.QueryRowContext(ctx, query,
			sql.Named("id", id.String()), sql.Named("now", tx.now), sql.Named("stamp", tx.stamp)))
		if err != nil {
			return err
		}
		journal := newJournal(tx.now)
		journal.add(j.ID, kind, j.Attempt, "")
		return journal.flush(ctx, tx.Tx)
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: cancel job %s: %w", id, err)
	}
	if requested {
		// After the commit, so that the holder's engine, whatever it does
		// next, sees the request in the database too.
		s.hub.Send(store.Notification{CancelJob: id})
	}
	return j, nil
}

// JobRetry puts a failed or canceled job back to queued, attempts reset
// and due now; job.ErrWrongState from another state, job.ErrDuplicate
// when a queued or running twin holds its args hash.
func (s *Store) JobRetry(ctx context.Context, id uuid.UUID) (*job.Job, error) {
	var j *job.Job
	err := s.jobsTx(ctx, func(tx *jobWrite) error {
		cur, err := scanJob(tx.QueryRowContext(ctx, jobGetSQL, id.String()))
		if err != nil {
			return err
		}
		if cur.State != job.StateFailed && cur.State != job.StateCanceled {
			return fmt.Errorf("job is %s: %w", cur.State, job.ErrWrongState)
		}
		if cur.ArgsHash != "" {
			twin, err := scanJob(tx.QueryRowContext(ctx, jobActiveTwinSQL, cur.ArgsHash))
			if err == nil {
				return fmt.Errorf("job %s is its active twin: %w", twin.ID, job.ErrDuplicate)
			}
			if !errors.Is(err, job.ErrNotFound) {
				return err
			}
		}
		j, err = scanJob(tx.QueryRowContext(ctx, retrySQL,
			sql.Named("id", id.String()), sql.Named("now", tx.now), sql.Named("stamp", tx.stamp)))
		if err != nil {
			return err
		}
		journal := newJournal(tx.now)
		journal.add(j.ID, job.EventManualRetry, j.Attempt, "")
		return journal.flush(ctx, tx.Tx)
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: retry job %s: %w", id, err)
	}
	s.wakeQueue(j.Queue)
	return j, nil
}

// JobRescue returns up to limit running jobs whose lease expired (at or
// before now) to queued, or fails them when they used all their attempts;
// a job whose cancel was requested ends canceled, since it must not run
// again.
func (s *Store) JobRescue(ctx context.Context, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var wake *wakeups
	var n int
	err := s.jobsTx(ctx, func(tx *jobWrite) error {
		now := tx.now
		wake = newWakeups(now)
		rows, err := tx.QueryContext(ctx, rescueSQL,
			sql.Named("now", now), sql.Named("stamp", tx.stamp), sql.Named("limit", limit))
		if err != nil {
			return err
		}
		defer rows.Close()
		journal := newJournal(now)
		for rows.Next() {
			var (
				id, queue, state string
				attempt          int
			)
			if err := rows.Scan(&id, &queue, &state, &attempt); err != nil {
				return err
			}
			uid, err := uuid.Parse(id)
			if err != nil {
				return fmt.Errorf("job id %q: %w", id, err)
			}
			kind := job.EventRescued
			switch job.State(state) {
			case job.StateFailed:
				kind = job.EventFailed
			case job.StateCanceled:
				kind = job.EventCanceled
			default:
				wake.add(queue, now)
			}
			journal.add(uid, kind, attempt, "lease expired")
			n++
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close() // before the next statement on this connection
		return journal.flush(ctx, tx.Tx)
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: rescue: %w", err)
	}
	s.send(wake)
	return n, nil
}

// JobPrune deletes up to limit finished jobs whose finished_at is before
// before, oldest first, and their events.
func (s *Store) JobPrune(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var n int
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		var err error
		n, err = deleteJobs(ctx, tx, pruneJobsSQL,
			sql.Named("before", before.UnixMicro()),
			sql.Named("limit", limit),
		)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: prune: %w", err)
	}
	return n, nil
}

// deleteJobs runs query, a DELETE of jobs that returns their ids, and
// deletes their events; it returns how many jobs it deleted.
func deleteJobs(ctx context.Context, tx *sql.Tx, query string, args ...any) (int, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return 0, err
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil || len(ids) == 0 {
		return 0, err
	}
	rows.Close() // before the next statement on this connection
	list, err := json.Marshal(ids)
	if err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, pruneEventsSQL, sql.Named("ids", string(list))); err != nil {
		return 0, err
	}
	return len(ids), nil
}
