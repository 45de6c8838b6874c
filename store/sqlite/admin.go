package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// JobCancel cancels a queued job at once or asks a running one to stop;
// job.ErrWrongState when the job is already final. Cancelling a running
// job whose cancel was already requested returns it unchanged. The write
// transaction reads the row, decides (job.Cancel) and applies.
func (s *executor) JobCancel(ctx context.Context, id uuid.UUID) (*job.Job, error) {
	var (
		j     *job.Job
		stops []uuid.UUID // the running jobs this call asked to stop
		wake  *wakeups    // the ends' wake-ups (a workflow's dependents)
	)
	err := s.jobsTx(ctx, func(tx *jobWrite) error {
		wake = newWakeups(tx.now, s.counted)
		var err error
		j, err = s.cancelTree(ctx, tx, wake, id, &stops)
		return err
	})
	if err != nil {
		return nil, errorf("sqlite: cancel job %s: %w", id, err)
	}
	s.send(wake)
	if len(stops) > 0 {
		// After the commit, so that the holder's engine, whatever it does
		// next, sees the request in the database too.
		s.afterCommit(func() {
			for _, id := range stops {
				s.hub.Send(store.Notification{CancelJob: id})
			}
		})
	}
	return j, nil
}

// cancelTree cancels job id (job.Cancel) and then, whatever became of
// it, its children that are not final, and theirs, in the write
// transaction; it notes the running jobs it asked to stop in stops.
func (s *executor) cancelTree(ctx context.Context, tx *jobWrite, wake *wakeups, id uuid.UUID, stops *[]uuid.UUID) (*job.Job, error) {
	cur, err := scanJob(tx.QueryRowContext(ctx, jobGetSQL, id.String()))
	if err != nil {
		return nil, err
	}
	t, write, err := job.Cancel(job.FactsOf(cur), fromMicro(tx.now))
	if err != nil {
		return nil, err
	}
	j := cur
	switch {
	case !write:
	case (cur.WorkflowID != uuid.Nil || cur.ParentID != uuid.Nil) && t.State.Final():
		j, err = s.endTask(ctx, tx, wake, cur, t)
	case cur.State == job.StateWaiting:
		// A job waiting for its children or a signal: its wait_for goes
		// with the wait (task_set_state.sql writes it).
		j, err = setTaskState(ctx, tx, store.TaskDecided{ID: cur.ID, Queue: cur.Queue, Transition: t})
	default:
		j, err = setState(ctx, tx, cur, t)
		if t.RequestsCancel() {
			*stops = append(*stops, id)
		}
	}
	if err != nil {
		return nil, err
	}
	children, err := activeChildren(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	for _, c := range children {
		if _, err := s.cancelTree(ctx, tx, wake, c, stops); err != nil {
			return nil, fmt.Errorf("cancel child %s: %w", c, err)
		}
	}
	return j, nil
}

// JobRetry puts a failed or canceled job back to queued, attempts reset
// and due now; job.ErrWrongState from another state, job.ErrDuplicate
// when a queued or running twin holds its args hash. The write
// transaction reads the row, decides (job.Retry) and applies.
func (s *executor) JobRetry(ctx context.Context, id uuid.UUID) (*job.Job, error) {
	var (
		j    *job.Job
		wake *wakeups
	)
	err := s.jobsTx(ctx, func(tx *jobWrite) error {
		wake = newWakeups(tx.now, s.counted)
		cur, err := scanJob(tx.QueryRowContext(ctx, jobGetSQL, id.String()))
		if err != nil {
			return err
		}
		if cur.WorkflowID != uuid.Nil {
			retried := []job.WorkflowEvent{{Kind: job.WorkflowEventRetried, Detail: fmt.Sprintf("task %q retried", cur.Ref)}}
			_, changed, err := s.retryTasks(ctx, tx, wake, cur.WorkflowID, []uuid.UUID{cur.ID}, retried)
			for _, c := range changed {
				if c.ID == cur.ID {
					j = c
				}
			}
			return err
		}
		t, err := job.Retry(job.FactsOf(cur), fromMicro(tx.now))
		if err != nil {
			return err
		}
		if err := refuseActiveTwin(ctx, tx, cur.ArgsHash); err != nil {
			return err
		}
		if j, err = setState(ctx, tx, cur, t); err != nil {
			return err
		}
		wake.add(j.Queue, j.RunAt.UnixMicro())
		return nil
	})
	if err != nil {
		return nil, errorf("sqlite: retry job %s: %w", id, err)
	}
	s.send(wake)
	return j, nil
}

// JobRerun puts a finished job back to queued, its result kept readable
// until the next claim; job.ErrWrongState from a queued or running job
// (but a rerun's, returned unchanged), job.ErrDuplicate when a queued or
// running twin holds its args hash. The write transaction reads the row,
// decides (job.Rerun) and applies.
func (s *executor) JobRerun(ctx context.Context, id uuid.UUID, params store.RerunParams) (*job.Job, error) {
	var (
		j    *job.Job
		wake *wakeups
	)
	err := s.jobsTx(ctx, func(tx *jobWrite) error {
		wake = newWakeups(tx.now, s.counted)
		cur, err := scanJob(tx.QueryRowContext(ctx, jobGetSQL, id.String()))
		if err != nil {
			return err
		}
		t, write, err := store.DecideRerun(cur, params, fromMicro(tx.now), s.maxArgs)
		if err != nil || !write {
			j = cur
			return err
		}
		hash := cur.ArgsHash
		if t.Rerun.Args != nil {
			hash = t.Rerun.ArgsHash
		}
		if err := refuseActiveTwin(ctx, tx, hash); err != nil {
			return err
		}
		if j, err = setState(ctx, tx, cur, t); err != nil {
			return err
		}
		wake.add(j.Queue, j.RunAt.UnixMicro())
		return nil
	})
	if err != nil {
		return nil, errorf("sqlite: rerun job %s: %w", id, err)
	}
	s.send(wake)
	return j, nil
}

// refuseActiveTwin answers job.ErrDuplicate when a queued or running job
// holds args hash (none: nothing to check): a job put back to queued must
// not become a second active job with the same args.
func refuseActiveTwin(ctx context.Context, tx *jobWrite, hash string) error {
	if hash == "" {
		return nil
	}
	twin, err := scanJob(tx.QueryRowContext(ctx, jobActiveTwinSQL, hash))
	if err == nil {
		return fmt.Errorf("job %s is its active twin: %w", twin.ID, job.ErrDuplicate)
	}
	if !errors.Is(err, job.ErrNotFound) {
		return err
	}
	return nil
}

// setState applies an operator's transition t of cur, read in this write
// transaction, fenced by the state and lease token cur has, with the
// journal entries and attempted_at it decided, and returns the job as it
// now is. A job it makes final records its callback, if it has one.
func setState(ctx context.Context, tx *jobWrite, cur *job.Job, t job.Transition) (*job.Job, error) {
	var token any
	if cur.LeaseToken != uuid.Nil {
		token = cur.LeaseToken.String()
	}
	entries, err := job.MarshalJournal(t.Events)
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", cur.ID, err)
	}
	var (
		rerun, args             any // NULL: not a rerun, args kept
		previousState, argsHash string
	)
	if rr := t.Rerun; rr != nil {
		rerun, previousState, argsHash = rr.Count, string(rr.PreviousState), rr.ArgsHash
		if rr.Args != nil {
			args = string(rr.Args)
		}
	}
	j, err := scanJob(tx.QueryRowContext(ctx, jobSetStateSQL,
		sql.Named("id", cur.ID.String()),
		sql.Named("from", string(t.From)),
		sql.Named("token", token),
		sql.Named("state", string(t.State)),
		sql.Named("run_at", microOf(t.RunAt)),
		sql.Named("attempt", t.Attempt),
		sql.Named("cancel_requested", t.CancelRequested),
		sql.Named("finished_at", nullMicroOf(t.FinishedAt)),
		sql.Named("attempted_at", nullMicroOf(t.AttemptedAt)),
		sql.Named("entries", nullJSON(entries)),
		sql.Named("stamp", tx.stamp),
		sql.Named("rerun", rerun),
		sql.Named("previous_state", previousState),
		sql.Named("args", args),
		sql.Named("args_hash", argsHash),
	))
	if errors.Is(err, job.ErrNotFound) {
		// The write lock is held since the read: the fence cannot fail but
		// by a bug.
		return nil, fmt.Errorf("job %s changed under the write lock", cur.ID)
	}
	if err != nil {
		return nil, err
	}
	if t.FinishedAt != nil && j.CallbackURL != "" {
		if err := recordEvents(ctx, tx, []outboxEvent{{ID: j.ID.String(), Type: store.WebhookCallback}}); err != nil {
			return nil, err
		}
	}
	return j, nil
}

// JobRescue returns up to limit running jobs whose lease expired (at or
// before now) to queued, or ends them failed or canceled: the write
// transaction reads their facts, decides (store.DecideRescue) and applies
// the decisions in one statement.
func (s *executor) JobRescue(ctx context.Context, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var (
		wake *wakeups
		n    int
	)
	err := s.jobsTx(ctx, func(tx *jobWrite) error {
		wake = newWakeups(tx.now, s.counted)
		held, err := lockHeld(ctx, tx, lockExpiredSQL, sql.Named("now", tx.now), sql.Named("limit", limit))
		if err != nil || len(held) == 0 {
			return err
		}
		decided, err := store.DecideRescue(held, fromMicro(tx.now))
		if err != nil {
			return err
		}
		if err := setStateIfRunning(ctx, tx, wake, decided); err != nil {
			return err
		}
		if _, err := s.step(ctx, tx, wake, store.EndsOf(decided), nil); err != nil {
			return fmt.Errorf("workflow step: %w", err)
		}
		n = len(decided)
		return nil
	})
	if err != nil {
		return 0, errorf("sqlite: rescue: %w", err)
	}
	s.send(wake)
	return n, nil
}

// JobTimeOut ends the attempts of up to params.Limit running jobs whose
// deadline passed (at or before now): the write transaction reads their
// facts, decides (store.DecideTimeOut) and applies the decisions in one
// statement.
func (s *executor) JobTimeOut(ctx context.Context, params store.TimeOutParams) (int, error) {
	if params.Limit <= 0 {
		return 0, nil
	}
	var (
		wake *wakeups
		n    int
	)
	err := s.jobsTx(ctx, func(tx *jobWrite) error {
		wake = newWakeups(tx.now, s.counted)
		held, err := lockHeld(ctx, tx, lockTimedOutSQL, sql.Named("now", tx.now), sql.Named("limit", params.Limit))
		if err != nil || len(held) == 0 {
			return err
		}
		decided, err := store.DecideTimeOut(held, fromMicro(tx.now), params.RetryDelay)
		if err != nil {
			return err
		}
		if err := setStateIfRunning(ctx, tx, wake, decided); err != nil {
			return err
		}
		if _, err := s.step(ctx, tx, wake, store.EndsOf(decided), nil); err != nil {
			return fmt.Errorf("workflow step: %w", err)
		}
		n = len(decided)
		return nil
	})
	if err != nil {
		return 0, errorf("sqlite: time out: %w", err)
	}
	s.send(wake)
	return n, nil
}

// JobPrune deletes up to limit finished jobs whose finished_at is before
// before, oldest first, with their journals, up to limit outbox events
// older than before (prune_webhook_events.sql), and up to limit rows of
// the partitions' flow state that has passed (prune_partitions.sql).
func (s *executor) JobPrune(ctx context.Context, before time.Time, limit int) (int, error) {
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
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, pruneWebhookEventsSQL, sql.Named("before", before.UnixMicro()), sql.Named("limit", limit))
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, prunePartitionsSQL, sql.Named("now", s.now()), sql.Named("limit", limit))
		if err != nil {
			return err
		}
		tasks, err := pruneWorkflows(ctx, tx, before.UnixMicro(), limit)
		n += tasks
		return err
	})
	if err != nil {
		return 0, errorf("sqlite: prune: %w", err)
	}
	return n, nil
}

// deleteJobs runs query, a DELETE of jobs (their journals are in their
// rows), and returns how many jobs it deleted.
func deleteJobs(ctx context.Context, tx *sql.Tx, query string, args ...any) (int, error) {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// endTask applies t, an operator's transition that ends the workflow task
// cur, with its workflow step, in the write transaction, and returns the
// task as it now is.
func (s *executor) endTask(ctx context.Context, tx *jobWrite, wake *wakeups, cur *job.Job, t job.Transition) (*job.Job, error) {
	end := store.TaskEnd{ID: cur.ID, WorkflowID: cur.WorkflowID, Ref: cur.Ref, From: cur.State, State: t.State, Parent: cur.ParentID}
	own := []store.TaskDecided{{ID: cur.ID, Queue: cur.Queue, Transition: t}}
	changed, err := s.step(ctx, tx, wake, []store.TaskEnd{end}, own)
	if err != nil {
		return nil, fmt.Errorf("workflow step: %w", err)
	}
	return changed[0], nil
}
