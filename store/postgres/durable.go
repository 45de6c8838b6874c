package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// Durable execution (store.DurableStore), each operation in one
// transaction whose first statement locks the job's row (fenced by its
// lease, for a holder's write): what it reads then cannot change before
// it writes.

// JobStep records a step the lease holder completed, fenced by the lease.
func (s *executor) JobStep(ctx context.Context, lease store.Lease, p store.StepParams) (*store.StepResult, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	var res store.StepResult
	err := s.atomically(ctx, func(ex *executor) error {
		var (
			count int
			at    time.Time
		)
		err := ex.tx.QueryRow(ctx, stepLeaseSQL, s.now(), pgUUID(lease.ID), pgUUID(lease.Token), lease.Owner).
			Scan(&res.Step.Attempt, &res.CancelRequested, &count, &at)
		if errors.Is(err, pgx.ErrNoRows) {
			return job.ErrLeaseLost
		}
		if err != nil {
			return err
		}
		prev, err := scanStep(ex.tx.QueryRow(ctx, stepGetSQL, pgUUID(lease.ID), p.Name))
		if err == nil {
			res.Step = prev
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if count >= p.Limit() {
			return store.TooManySteps(p.Limit())
		}
		started := at
		if !p.StartedAt.IsZero() && !p.StartedAt.After(at) {
			started = p.StartedAt
		}
		res.Recorded = true
		res.Step.Name, res.Step.Result = p.Name, nullRaw(p.Result)
		res.Step.StartedAt, res.Step.FinishedAt = started.UTC().Truncate(time.Microsecond), at.UTC()
		_, err = ex.tx.Exec(ctx, stepInsertSQL, pgUUID(lease.ID), p.Name, []byte(res.Step.Result), res.Step.Attempt,
			res.Step.StartedAt, at)
		return err
	})
	if err != nil {
		return nil, errorf("postgres: step %q of job %s: %w", p.Name, lease.ID, err)
	}
	return &res, nil
}

// nullRaw is raw, or nil for none (JSON null included).
func nullRaw(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}

// scanStep reads a step as step_get.sql and steps_of.sql select it.
func scanStep(row pgx.Row) (job.Step, error) {
	var (
		st     job.Step
		result []byte
	)
	if err := row.Scan(&st.Name, &result, &st.Attempt, &st.StartedAt, &st.FinishedAt); err != nil {
		return st, err
	}
	st.Result = nullRaw(result)
	st.StartedAt, st.FinishedAt = st.StartedAt.UTC(), st.FinishedAt.UTC()
	return st, nil
}

// JobSteps returns a job's steps, in the order they were recorded.
func (s *executor) JobSteps(ctx context.Context, id uuid.UUID) ([]job.Step, error) {
	var steps []job.Step
	err := s.readSnapshot(ctx, func(q querier) error {
		rows, err := q.Query(ctx, stepsOfSQL, pgUUID(id))
		if err != nil {
			return err
		}
		steps, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (job.Step, error) { return scanStep(row) })
		return err
	})
	if err != nil {
		return nil, errorf("postgres: steps of job %s: %w", id, err)
	}
	return steps, nil
}

// JobWait ends the lease holder's attempt waiting (job.Wait).
func (s *executor) JobWait(ctx context.Context, lease store.Lease, w job.WaitRequest) (*job.Job, error) {
	if err := w.Check(); err != nil {
		return nil, err
	}
	var (
		j     *job.Job
		later *store.ClaimBound
		queue string
	)
	err := s.atomically(ctx, func(ex *executor) error {
		now := s.now()
		var (
			held []store.Held
			at   time.Time
		)
		err := ex.transact(ctx, func(r *rounds) error {
			var err error
			held, at, err = lockHeld(ctx, r, lockHeldSQL, now, [][16]byte{lease.ID}, [][16]byte{lease.Token})
			return err
		})
		if err != nil {
			return err
		}
		if len(held) != 1 || lease.Owner != "" && held[0].LeaseOwner != lease.Owner {
			return job.ErrLeaseLost
		}
		h := held[0]
		if h.CancelRequested {
			// A cancel request wins over a wait as over a release: the
			// job ends canceled, as JobFinish ends it.
			if _, err := ex.JobFinish(ctx, []store.Outcome{{Lease: lease, Outcome: job.Outcome{Status: job.OutcomeReleased}}}); err != nil {
				return err
			}
			j, err = scanJob(ex.tx.QueryRow(ctx, jobGetSQL, pgUUID(lease.ID)))
			return err
		}
		facts, err := waitFacts(ctx, ex.tx, lease.ID, w)
		if err != nil {
			return err
		}
		t, err := job.Wait(h.Facts, w, facts, at)
		if err != nil {
			return err
		}
		entries, err := job.MarshalJournal(t.Events)
		if err != nil {
			return err
		}
		var (
			waitFor, signalWait *string
			pending             int32
		)
		if tc := t.Task; tc != nil {
			waitFor, pending = nullText(string(tc.WaitFor)), int32(tc.Pending)
		}
		if w.For == job.WaitSignal {
			signalWait = &w.Signal
		}
		j, err = scanJob(ex.tx.QueryRow(ctx, jobWaitSQL, now, pgUUID(lease.ID), pgUUID(lease.Token), string(t.State),
			timePtr(t.RunAt), int32(t.Attempt), t.FinishedAt, t.AttemptedAt, waitFor, pending, entries, signalWait))
		if err != nil {
			return fmt.Errorf("apply the wait: %w", err)
		}
		if facts.SignalKept {
			if _, err := ex.tx.Exec(ctx, signalDeliverSQL, pgUUID(lease.ID), w.Signal, now); err != nil {
				return fmt.Errorf("deliver the signal: %w", err)
			}
		}
		if t.State == job.StateQueued && t.RunAt.After(at) {
			later, queue = &store.ClaimBound{RunAt: t.RunAt}, h.Queue
		}
		return nil
	})
	if err != nil {
		return nil, errorf("postgres: wait in job %s: %w", lease.ID, err)
	}
	if later != nil {
		s.afterCommit(func() { s.delayed.At(queue, later.RunAt) })
	}
	return j, nil
}

// waitFacts reads what a wait w of job id depends on, in its
// transaction, whose row lock on the job orders it with the children's
// ends and the signals sent.
func waitFacts(ctx context.Context, q querier, id uuid.UUID, w job.WaitRequest) (job.WaitFacts, error) {
	var f job.WaitFacts
	switch w.For {
	case job.WaitChildren:
		if err := q.QueryRow(ctx, childrenPendingSQL, pgUUID(id)).Scan(&f.PendingChildren); err != nil {
			return f, fmt.Errorf("count the children: %w", err)
		}
	case job.WaitSignal:
		var (
			payload   []byte
			delivered bool
		)
		err := q.QueryRow(ctx, signalGetSQL, pgUUID(id), w.Signal).Scan(&payload, &delivered)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return f, fmt.Errorf("read the signal: %w", err)
		}
		f.SignalKept = err == nil && !delivered
		if err == nil && delivered {
			if _, err := q.Exec(ctx, signalForgetSQL, pgUUID(id), w.Signal); err != nil {
				return f, fmt.Errorf("forget the signal delivered before: %w", err)
			}
		}
	}
	return f, nil
}

// JobSignal sends a signal to a job: it wakes the job waiting for it, or
// is kept until the job waits for it. The job's row is locked first, so
// that a wait and a signal take turns.
func (s *executor) JobSignal(ctx context.Context, id uuid.UUID, name string, payload json.RawMessage) (*store.SignalResult, error) {
	if name == "" {
		return nil, job.Invalid("name", "is required")
	}
	if err := job.CheckName("name", name); err != nil {
		return nil, err
	}
	if err := job.CheckJSON("payload", payload); err != nil {
		return nil, err
	}
	var res store.SignalResult
	err := s.atomically(ctx, func(ex *executor) error {
		now := s.now()
		var (
			cur *job.Job
			at  time.Time
		)
		err := ex.transact(ctx, func(r *rounds) error {
			var err error
			cur, at, err = lockJob(ctx, r, now, id)
			return err
		})
		if err != nil {
			return err
		}
		if cur.State.Final() {
			return fmt.Errorf("job is %s: %w", cur.State, job.ErrWrongState)
		}
		var (
			waitsFor, lastKind string
			last               job.Event
			prev               []byte
			delivered          bool
		)
		if err := ex.tx.QueryRow(ctx, signalWaitOfSQL, pgUUID(id)).Scan(&waitsFor, &lastKind, &last.Detail); err != nil {
			return err
		}
		last.Kind = job.EventKind(lastKind)
		err = ex.tx.QueryRow(ctx, signalGetSQL, pgUUID(id), name).Scan(&prev, &delivered)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("read the signal: %w", err)
		}
		wakes := store.SignalWakes(cur, waitsFor, name, err == nil && delivered, last)
		if _, err := ex.tx.Exec(ctx, signalPutSQL, pgUUID(id), name, []byte(nullRaw(payload)), now); err != nil {
			return fmt.Errorf("keep the signal: %w", err)
		}
		res.Job = cur
		if !wakes {
			return nil
		}
		t, err := job.Wake(job.FactsOf(cur), store.SignalDetail(name), at)
		if err != nil {
			return err
		}
		if _, err := ex.tx.Exec(ctx, signalDeliverSQL, pgUUID(id), name, now); err != nil {
			return fmt.Errorf("deliver the signal: %w", err)
		}
		res.Delivered = true
		return ex.transact(ctx, func(r *rounds) error {
			if cur.State == job.StateWaiting {
				st := &step{tasks: []store.TaskDecided{{ID: id, Queue: cur.Queue, Transition: t}}, at: at}
				if err := ex.applyStep(ctx, r, now, st); err != nil {
					return err
				}
				res.Job = st.changedJob(id)
				return nil
			}
			var err error
			res.Job, err = setState(ctx, r, now, cur, t)
			return err
		})
	})
	if err != nil {
		return nil, errorf("postgres: signal %q to job %s: %w", name, id, err)
	}
	return &res, nil
}
