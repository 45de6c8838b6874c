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

// JobCancel cancels a queued job or asks a running one to stop; a
// repeated cancel of a running job returns it and writes nothing. One
// transaction locks the row, decides (job.Cancel) and applies, in two
// round trips. See store.Store.
//
// The cancel of a parent cancels its children that are not final, and
// theirs, in the same transaction (cancelTree): each job's children are
// locked before the job, as a child's end locks the child before its
// parent. Should PostgreSQL still break a deadlock with a child's end by
// failing this transaction, a transaction of its own is run again.
func (s *executor) JobCancel(ctx context.Context, id uuid.UUID) (*job.Job, error) {
	for try := 0; ; try++ {
		var j *job.Job
		err := s.atomically(ctx, func(ex *executor) error {
			var err error
			j, err = ex.cancelTree(ctx, id, true)
			return err
		})
		if err != nil && s.tx == nil && deadlock(err) && try < insertRounds {
			continue
		}
		if err != nil {
			return nil, errorf("postgres: cancel job %s: %w", id, err)
		}
		return j, nil
	}
}

// cancelTree cancels job id and its children not final, transitively,
// in the transaction s runs in: the children locked first (each job's
// before the job), then the job canceled (cancel), then each child. top
// says id is the job the operator named: only its being final is an
// error (a child may have ended since its parent read it).
func (s *executor) cancelTree(ctx context.Context, id uuid.UUID, top bool) (*job.Job, error) {
	rows, err := s.tx.Query(ctx, childrenLockActiveSQL, pgUUID(id))
	if err != nil {
		return nil, fmt.Errorf("lock the children: %w", err)
	}
	children, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (uuid.UUID, error) {
		var c uuid.UUID
		return c, row.Scan(uuidDest(&c))
	})
	if err != nil {
		return nil, fmt.Errorf("lock the children: %w", err)
	}
	var j *job.Job
	err = s.transact(ctx, func(r *rounds) error {
		var err error
		j, err = s.cancel(ctx, r, id)
		return err
	})
	if err != nil && (top || !errors.Is(err, job.ErrWrongState)) {
		return nil, err
	}
	for _, c := range children {
		if _, err := s.cancelTree(ctx, c, false); err != nil {
			return nil, fmt.Errorf("cancel child %s: %w", c, err)
		}
	}
	return j, nil
}

func (s *executor) cancel(ctx context.Context, r *rounds, id uuid.UUID) (*job.Job, error) {
	now := s.now()
	cur, at, err := lockJob(ctx, r, now, id)
	if err != nil {
		return nil, err
	}
	t, write, err := job.Cancel(job.FactsOf(cur), at)
	if err != nil {
		return nil, err
	}
	if !write {
		return cur, r.round(ctx, true, func(*pgx.Batch) {}, func(pgx.BatchResults) error { return nil }) // commit
	}
	if (cur.WorkflowID != uuid.Nil || cur.ParentID != uuid.Nil) && t.State.Final() {
		return s.endTask(ctx, r, now, at, cur, t)
	}
	if cur.State == job.StateWaiting {
		// A job waiting for its children or a signal: its wait_for goes
		// with the wait (task_set_state.sql writes it).
		st := &step{tasks: []store.TaskDecided{{ID: cur.ID, Queue: cur.Queue, Transition: t}}, at: at}
		if err := s.applyStep(ctx, r, now, st); err != nil {
			return nil, err
		}
		return st.changedJob(cur.ID), nil
	}
	return setState(ctx, r, now, cur, t)
}

// endTask applies t, an operator's transition that ends the workflow task
// cur (its row locked by this transaction), with its workflow step, in
// the last rounds of r, and returns the task as it now is.
func (s *executor) endTask(ctx context.Context, r *rounds, now *time.Time, at time.Time, cur *job.Job, t job.Transition) (*job.Job, error) {
	end := store.TaskEnd{ID: cur.ID, WorkflowID: cur.WorkflowID, Ref: cur.Ref, From: cur.State, State: t.State, Parent: cur.ParentID}
	own := []store.TaskDecided{{ID: cur.ID, Queue: cur.Queue, Transition: t}}
	st, err := s.lockStep(ctx, r, []store.TaskEnd{end}, own, at)
	if err != nil {
		return nil, fmt.Errorf("workflow step: %w", err)
	}
	if err := s.applyStep(ctx, r, now, st); err != nil {
		return nil, err
	}
	return st.changedJob(cur.ID), nil
}

// JobRetry puts a failed or canceled job back to queued. One transaction
// locks the row, decides (job.Retry) and applies, in two round trips. See
// store.Store.
func (s *executor) JobRetry(ctx context.Context, id uuid.UUID) (*job.Job, error) {
	var j *job.Job
	err := s.transact(ctx, func(r *rounds) error {
		var err error
		j, err = s.retry(ctx, r, id)
		return err
	})
	if err != nil {
		return nil, errorf("postgres: retry job %s: %w", id, err)
	}
	return j, nil
}

func (s *executor) retry(ctx context.Context, r *rounds, id uuid.UUID) (*job.Job, error) {
	now := s.now()
	cur, at, err := lockJob(ctx, r, now, id)
	if err != nil {
		return nil, err
	}
	if cur.WorkflowID != uuid.Nil {
		retried := []job.WorkflowEvent{{Kind: job.WorkflowEventRetried, At: at, Detail: fmt.Sprintf("task %q retried", cur.Ref)}}
		st, err := s.retryTasks(ctx, r, now, cur.WorkflowID, []uuid.UUID{cur.ID}, retried)
		if err != nil {
			return nil, err
		}
		return st.changedJob(cur.ID), nil
	}
	t, err := job.Retry(job.FactsOf(cur), at)
	if err != nil {
		return nil, err
	}
	j, err := setState(ctx, r, now, cur, t)
	if uniqueViolation(err, "jobd_jobs_active") {
		err = job.ErrDuplicate
	}
	return j, err
}

// lockJob locks one job's row, in a round of its own, and returns it with
// the transaction's time; job.ErrNotFound when there is none.
func lockJob(ctx context.Context, r *rounds, now *time.Time, id uuid.UUID) (*job.Job, time.Time, error) {
	var (
		j  *job.Job
		at time.Time
	)
	err := r.round(ctx, false, func(b *pgx.Batch) { b.Queue(jobLockSQL, now, pgUUID(id)) }, func(br pgx.BatchResults) error {
		var row jobRow
		if err := br.QueryRow().Scan(append(row.dest(), &at)...); err != nil {
			return notFound(err)
		}
		var err error
		j, err = row.job()
		return err
	})
	return j, at, err
}

// setState applies an operator's transition t of cur, whose row this
// transaction locked, fenced by the state and lease token cur has, with
// the journal entries and attempted_at it decided, in the last round of
// r, and returns the job as it now is.
func setState(ctx context.Context, r *rounds, now *time.Time, cur *job.Job, t job.Transition) (*job.Job, error) {
	var token *[16]byte
	if cur.LeaseToken != uuid.Nil {
		b := pgUUID(cur.LeaseToken)
		token = &b
	}
	entries, err := job.MarshalJournal(t.Events)
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", cur.ID, err)
	}
	var j *job.Job
	var (
		rerun                   *int32
		previousState, argsHash string
		args                    []byte // nil: kept
	)
	if rr := t.Rerun; rr != nil {
		n := int32(rr.Count)
		rerun, previousState, argsHash = &n, string(rr.PreviousState), rr.ArgsHash
		if rr.Args != nil {
			args = rr.Args
		}
	}
	err = r.round(ctx, true, func(b *pgx.Batch) {
		b.Queue(jobSetStateSQL, now, pgUUID(cur.ID), string(t.From), token,
			string(t.State), timePtr(t.RunAt), int32(t.Attempt), t.CancelRequested, t.FinishedAt,
			entries, t.AttemptedAt, t.RequestsCancel(), rerun, previousState, args, argsHash)
	}, func(br pgx.BatchResults) error {
		var err error
		j, err = scanJob(br.QueryRow())
		if errors.Is(err, pgx.ErrNoRows) {
			// The row is locked: the fence cannot fail but by a bug.
			return fmt.Errorf("job %s changed under its lock", cur.ID)
		}
		return err
	})
	return j, err
}

// JobRerun puts a finished job back to queued, its result kept readable
// until the next claim. One transaction locks the row, decides
// (job.Rerun) and applies, in two round trips. See store.Store.
func (s *executor) JobRerun(ctx context.Context, id uuid.UUID, params store.RerunParams) (*job.Job, error) {
	var j *job.Job
	err := s.transact(ctx, func(r *rounds) error {
		var err error
		j, err = s.rerun(ctx, r, id, params)
		return err
	})
	if err != nil {
		return nil, errorf("postgres: rerun job %s: %w", id, err)
	}
	return j, nil
}

func (s *executor) rerun(ctx context.Context, r *rounds, id uuid.UUID, params store.RerunParams) (*job.Job, error) {
	now := s.now()
	cur, at, err := lockJob(ctx, r, now, id)
	if err != nil {
		return nil, err
	}
	t, write, err := store.DecideRerun(cur, params, at, s.maxArgs)
	if err != nil {
		return nil, err
	}
	if !write {
		return cur, r.round(ctx, true, func(*pgx.Batch) {}, func(pgx.BatchResults) error { return nil }) // commit
	}
	j, err := setState(ctx, r, now, cur, t)
	if uniqueViolation(err, "jobd_jobs_active") {
		err = job.ErrDuplicate
	}
	return j, err
}

// JobRescue returns jobs whose lease expired to queued, or ends them
// failed or canceled: one transaction locks them (skipping those locked
// by a heartbeat or a finish), decides (store.DecideRescue) and applies,
// in two round trips. See store.Store.
func (s *executor) JobRescue(ctx context.Context, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var done applied
	err := s.transact(ctx, func(r *rounds) error {
		var err error
		done, err = s.rescue(ctx, r, limit)
		return err
	})
	if err != nil {
		return 0, errorf("postgres: rescue expired leases: %w", err)
	}
	s.afterCommit(func() { s.wakeStepLater(done.step) })
	return len(done.decided), nil
}

func (s *executor) rescue(ctx context.Context, r *rounds, limit int) (applied, error) {
	now := s.now()
	// Pinned: the reaper walks the lease index, longest expired first,
	// whatever the statistics say (an empty, never analysed table would
	// otherwise be read whole, and keep that plan as it fills).
	held, at, err := lockHeld(ctx, r, lockExpiredSQL, now, limit)
	if err != nil {
		return applied{}, err
	}
	decided, err := store.DecideRescue(held, at)
	if err != nil {
		return applied{}, err
	}
	st, err := s.lockStep(ctx, r, store.EndsOf(decided), nil, at)
	if err != nil {
		return applied{}, fmt.Errorf("workflow step: %w", err)
	}
	return applied{decided: decided, at: at, step: st}, s.setStateIfRunning(ctx, r, now, decided, st)
}

// JobTimeOut ends the attempts that passed their deadline: one
// transaction locks them (skipping those locked by a heartbeat or a
// finish), decides (store.DecideTimeOut) and applies, in two round trips.
// See store.Store.
func (s *executor) JobTimeOut(ctx context.Context, params store.TimeOutParams) (int, error) {
	if params.Limit <= 0 {
		return 0, nil
	}
	var done applied
	err := s.transact(ctx, func(r *rounds) error {
		now := s.now()
		held, at, err := lockHeld(ctx, r, lockTimedOutSQL, now, params.Limit)
		if err != nil {
			return err
		}
		decided, err := store.DecideTimeOut(held, at, params.RetryDelay)
		if err != nil {
			return err
		}
		st, err := s.lockStep(ctx, r, store.EndsOf(decided), nil, at)
		if err != nil {
			return fmt.Errorf("workflow step: %w", err)
		}
		done = applied{decided: decided, at: at, step: st}
		return s.setStateIfRunning(ctx, r, now, decided, st)
	})
	if err != nil {
		return 0, errorf("postgres: time out overdue attempts: %w", err)
	}
	s.afterCommit(func() { s.wakeLater(done) })
	return len(done.decided), nil
}

// JobPrune deletes old finished jobs and their journal, and the
// partitions' flow state that has passed, in one statement, then old
// finished workflows with their tasks, in another (workflow_prune.sql).
// See store.Store.
func (s *executor) JobPrune(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var n, tasks int
	if err := s.db.QueryRow(ctx, pruneSQL, before, limit, s.now()).Scan(&n); err != nil {
		return 0, errorf("postgres: prune finished jobs: %w", err)
	}
	err := s.transact(ctx, func(r *rounds) error {
		return r.pinnedRound(ctx, true, func(b *pgx.Batch) { b.Queue(workflowPruneSQL, before, limit) },
			func(br pgx.BatchResults) error { return br.QueryRow().Scan(&tasks) })
	})
	if err != nil {
		return 0, errorf("postgres: prune finished workflows: %w", err)
	}
	return n + tasks, nil
}
