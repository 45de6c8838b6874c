package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// Durable execution (store.DurableStore), each operation in one write
// transaction, which holds the file's one write lock: what it reads
// cannot change before it writes.

// JobStep records a step the lease holder completed, fenced by the lease.
func (s *executor) JobStep(ctx context.Context, lease store.Lease, p store.StepParams) (*store.StepResult, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	var res store.StepResult
	err := s.jobsTx(ctx, func(tx *jobWrite) error {
		var count int
		err := tx.QueryRowContext(ctx, stepLeaseSQL,
			sql.Named("id", lease.ID.String()),
			sql.Named("token", lease.Token.String()),
			sql.Named("owner", lease.Owner),
			sql.Named("now", tx.now),
			sql.Named("stamp", tx.stamp),
		).Scan(&res.Step.Attempt, &res.CancelRequested, &count)
		if errors.Is(err, sql.ErrNoRows) {
			return job.ErrLeaseLost
		}
		if err != nil {
			return err
		}
		prev, err := scanStep(tx.QueryRowContext(ctx, stepGetSQL, sql.Named("id", lease.ID.String()), sql.Named("name", p.Name)), nil)
		if err == nil {
			res.Step = prev
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if count >= p.Limit() {
			return store.TooManySteps(p.Limit())
		}
		started := tx.now
		if !p.StartedAt.IsZero() && p.StartedAt.UnixMicro() <= tx.now {
			started = p.StartedAt.UnixMicro()
		}
		res.Recorded = true
		res.Step.Name, res.Step.Result = p.Name, nullRaw(p.Result)
		res.Step.StartedAt, res.Step.FinishedAt = fromMicro(started), fromMicro(tx.now)
		_, err = tx.ExecContext(ctx, stepInsertSQL,
			sql.Named("id", lease.ID.String()),
			sql.Named("name", p.Name),
			sql.Named("result", nullJSON(res.Step.Result)),
			sql.Named("attempt", res.Step.Attempt),
			sql.Named("started_at", started),
			sql.Named("now", tx.now),
		)
		return err
	})
	if err != nil {
		return nil, errorf("sqlite: step %q of job %s: %w", p.Name, lease.ID, err)
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

// scanStep reads a step as step_get.sql and steps_of.sql select it
// (after the job id, into jobID, for the latter).
func scanStep(sc scanner, jobID *string) (job.Step, error) {
	var (
		st                  job.Step
		result              sql.NullString
		started, finishedAt int64
	)
	dest := []any{&st.Name, &result, &st.Attempt, &started, &finishedAt}
	if jobID != nil {
		dest = append([]any{jobID}, dest...)
	}
	if err := sc.Scan(dest...); err != nil {
		return st, err
	}
	if result.Valid {
		st.Result = json.RawMessage(result.String)
	}
	st.StartedAt, st.FinishedAt = fromMicro(started), fromMicro(finishedAt)
	return st, nil
}

// JobSteps returns a job's steps, in the order they were recorded.
func (s *executor) JobSteps(ctx context.Context, id uuid.UUID) ([]job.Step, error) {
	var steps []job.Step
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		byJob, err := readSteps(ctx, tx, []string{id.String()})
		steps = byJob[id.String()]
		return err
	})
	if err != nil {
		return nil, errorf("sqlite: steps of job %s: %w", id, err)
	}
	return steps, nil
}

// stepQueryer is what reads steps: a transaction.
type stepQueryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// readSteps reads the steps of the jobs ids, by job id.
func readSteps(ctx context.Context, q stepQueryer, ids []string) (map[string][]job.Step, error) {
	body, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, stepsOfSQL, sql.Named("ids", string(body)))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[string][]job.Step)
	for rows.Next() {
		var id string
		st, err := scanStep(rows, &id)
		if err != nil {
			return nil, err
		}
		out[id] = append(out[id], st)
	}
	for _, steps := range out {
		slices.SortStableFunc(steps, func(a, b job.Step) int { return a.FinishedAt.Compare(b.FinishedAt) })
	}
	return out, rows.Err()
}

// JobWait ends the lease holder's attempt waiting (job.Wait).
func (s *executor) JobWait(ctx context.Context, lease store.Lease, w job.WaitRequest) (*job.Job, error) {
	if err := w.Check(); err != nil {
		return nil, err
	}
	var (
		j    *job.Job
		wake *wakeups
	)
	err := s.jobsTx(ctx, func(tx *jobWrite) error {
		body, err := json.Marshal([]map[string]string{{"id": lease.ID.String(), "token": lease.Token.String()}})
		if err != nil {
			return err
		}
		held, err := lockHeld(ctx, tx, lockHeldSQL, sql.Named("leases", string(body)), sql.Named("now", tx.now))
		if err != nil {
			return err
		}
		if len(held) != 1 || lease.Owner != "" && held[0].LeaseOwner != lease.Owner {
			return job.ErrLeaseLost
		}
		h := held[0]
		wake = newWakeups(tx.now, s.counted)
		if h.CancelRequested {
			// A cancel request wins over a wait as over a release: the
			// job ends canceled, as JobFinish ends it.
			if _, err := s.finish(ctx, tx, wake, []store.Outcome{{Lease: lease, Outcome: job.Outcome{Status: job.OutcomeReleased}}}); err != nil {
				return err
			}
			j, err = scanJob(tx.QueryRowContext(ctx, jobGetSQL, lease.ID.String()))
			return err
		}
		facts, err := waitFacts(ctx, tx, lease.ID, w)
		if err != nil {
			return err
		}
		t, err := job.Wait(h.Facts, w, facts, fromMicro(tx.now))
		if err != nil {
			return err
		}
		if j, err = applyWait(ctx, tx, lease, w, t); err != nil {
			return err
		}
		if facts.SignalKept {
			if _, err := tx.ExecContext(ctx, signalDeliverSQL, sql.Named("id", lease.ID.String()),
				sql.Named("name", w.Signal), sql.Named("now", tx.now)); err != nil {
				return fmt.Errorf("deliver the signal: %w", err)
			}
		}
		if t.State == job.StateQueued {
			wake.add(h.Queue, t.RunAt.UnixMicro())
		}
		wake.left(h.Queue)
		return nil
	})
	if err != nil {
		return nil, errorf("sqlite: wait in job %s: %w", lease.ID, err)
	}
	s.send(wake)
	return j, nil
}

// waitFacts reads what a wait w of job id depends on, in its
// transaction.
func waitFacts(ctx context.Context, tx *jobWrite, id uuid.UUID, w job.WaitRequest) (job.WaitFacts, error) {
	var f job.WaitFacts
	switch w.For {
	case job.WaitChildren:
		if err := tx.QueryRowContext(ctx, childrenPendingSQL, sql.Named("id", id.String())).Scan(&f.PendingChildren); err != nil {
			return f, fmt.Errorf("count the children: %w", err)
		}
	case job.WaitSignal:
		var (
			payload   sql.NullString
			delivered sql.NullInt64
		)
		err := tx.QueryRowContext(ctx, signalGetSQL, sql.Named("id", id.String()), sql.Named("name", w.Signal)).Scan(&payload, &delivered)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return f, fmt.Errorf("read the signal: %w", err)
		}
		f.SignalKept = err == nil && !delivered.Valid
		if err == nil && delivered.Valid {
			if _, err := tx.ExecContext(ctx, signalForgetSQL, sql.Named("id", id.String()), sql.Named("name", w.Signal)); err != nil {
				return f, fmt.Errorf("forget the signal delivered before: %w", err)
			}
		}
	}
	return f, nil
}

// applyWait applies t, the wait w decided for the job lease holds.
func applyWait(ctx context.Context, tx *jobWrite, lease store.Lease, w job.WaitRequest, t job.Transition) (*job.Job, error) {
	entries, err := job.MarshalJournal(t.Events)
	if err != nil {
		return nil, err
	}
	var waitFor, signalWait any
	pending := 0
	if tc := t.Task; tc != nil {
		if tc.WaitFor != "" {
			waitFor = string(tc.WaitFor)
		}
		pending = tc.Pending
	}
	if w.For == job.WaitSignal {
		signalWait = w.Signal
	}
	j, err := scanJob(tx.QueryRowContext(ctx, jobWaitSQL,
		sql.Named("id", lease.ID.String()),
		sql.Named("token", lease.Token.String()),
		sql.Named("state", string(t.State)),
		sql.Named("run_at", microOf(t.RunAt)),
		sql.Named("attempt", t.Attempt),
		sql.Named("finished_at", nullMicroOf(t.FinishedAt)),
		sql.Named("attempted_at", nullMicroOf(t.AttemptedAt)),
		sql.Named("wait_for", waitFor),
		sql.Named("pending", pending),
		sql.Named("signal_wait", signalWait),
		sql.Named("entries", nullJSON(entries)),
		sql.Named("stamp", tx.stamp),
	))
	if err != nil {
		return nil, fmt.Errorf("apply the wait: %w", err)
	}
	return j, nil
}

// JobSignal sends a signal to a job: it wakes the job waiting for it, or
// is kept until the job waits for it.
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
	var (
		res  store.SignalResult
		wake *wakeups
	)
	err := s.jobsTx(ctx, func(tx *jobWrite) error {
		cur, err := scanJob(tx.QueryRowContext(ctx, jobGetSQL, id.String()))
		if err != nil {
			return err
		}
		if cur.State.Final() {
			return fmt.Errorf("job is %s: %w", cur.State, job.ErrWrongState)
		}
		var (
			waitsFor, lastKind string
			last               job.Event
			prev               sql.NullString
			delivered          sql.NullInt64
		)
		if err := tx.QueryRowContext(ctx, signalWaitOfSQL, sql.Named("id", id.String())).Scan(&waitsFor, &lastKind, &last.Detail); err != nil {
			return err
		}
		last.Kind = job.EventKind(lastKind)
		err = tx.QueryRowContext(ctx, signalGetSQL, sql.Named("id", id.String()), sql.Named("name", name)).Scan(&prev, &delivered)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("read the signal: %w", err)
		}
		if _, err := tx.ExecContext(ctx, signalPutSQL, sql.Named("id", id.String()), sql.Named("name", name),
			sql.Named("payload", nullJSON(nullRaw(payload))), sql.Named("now", tx.now)); err != nil {
			return fmt.Errorf("keep the signal: %w", err)
		}
		res.Job = cur
		if !store.SignalWakes(cur, waitsFor, name, delivered.Valid, last) {
			return nil
		}
		t, err := job.Wake(job.FactsOf(cur), store.SignalDetail(name), fromMicro(tx.now))
		if err != nil {
			return err
		}
		if cur.State == job.StateWaiting {
			res.Job, err = setTaskState(ctx, tx, store.TaskDecided{ID: id, Queue: cur.Queue, Transition: t})
		} else {
			res.Job, err = setState(ctx, tx, cur, t)
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, signalDeliverSQL, sql.Named("id", id.String()), sql.Named("name", name), sql.Named("now", tx.now)); err != nil {
			return fmt.Errorf("deliver the signal: %w", err)
		}
		res.Delivered = true
		wake = newWakeups(tx.now, s.counted)
		wake.add(cur.Queue, tx.now)
		return nil
	})
	if err != nil {
		return nil, errorf("sqlite: signal %q to job %s: %w", name, id, err)
	}
	if wake != nil {
		s.send(wake)
	}
	return &res, nil
}

// extraScanner scans the columns of a whole job and, after them, extra.
type extraScanner struct {
	sc    scanner
	extra []any
}

// Scan scans dest, then the extra columns.
func (e extraScanner) Scan(dest ...any) error { return e.sc.Scan(append(dest, e.extra...)...) }

// scanClaimed reads the jobs claim_jobs.sql returns, and, by id, the
// signal of the last signal wait of those that are durable ("" for
// none).
func scanClaimed(rows *sql.Rows) ([]*job.Job, map[uuid.UUID]string, error) {
	defer rows.Close()
	var (
		jobs    []*job.Job
		durable map[uuid.UUID]string
	)
	for rows.Next() {
		var (
			isDurable sql.NullInt64
			signal    sql.NullString
		)
		j, err := scanJob(extraScanner{sc: rows, extra: []any{&isDurable, &signal}})
		if err != nil {
			return nil, nil, err
		}
		if isDurable.Int64 != 0 {
			if durable == nil {
				durable = make(map[uuid.UUID]string)
			}
			durable[j.ID] = signal.String
		}
		jobs = append(jobs, j)
	}
	return jobs, durable, rows.Err()
}

// readResume sets what the durable jobs among jobs, just claimed, resume
// from (job.Job.Resume): their steps, their children and the signal of
// their last signal wait (durable, by id), in the claim's transaction. A
// batch without durable jobs reads nothing.
func readResume(ctx context.Context, tx *jobWrite, jobs []*job.Job, durable map[uuid.UUID]string) error {
	if len(durable) == 0 {
		return nil
	}
	ids := make([]string, 0, len(durable))
	for id := range durable {
		ids = append(ids, id.String())
	}
	steps, err := readSteps(ctx, tx, ids)
	if err != nil {
		return fmt.Errorf("read the steps: %w", err)
	}
	for _, j := range jobs {
		signal, ok := durable[j.ID]
		if !ok {
			continue
		}
		id := j.ID.String()
		r := &job.Resume{}
		if st := steps[id]; len(st) > 0 {
			r.Steps = make(map[string]job.Step, len(st))
			for _, s := range st {
				r.Steps[s.Name] = s
			}
		}
		if r.Children, err = readChildren(ctx, tx, id); err != nil {
			return err
		}
		if signal != "" {
			if r.Signal, err = readSignal(ctx, tx, id, signal); err != nil {
				return err
			}
		}
		j.Resume = r
	}
	return nil
}

// readChildren reads a parent's children, by key; nil for none.
func readChildren(ctx context.Context, tx *jobWrite, id string) (map[string]job.ChildEnd, error) {
	rows, err := tx.QueryContext(ctx, childrenOfSQL, sql.Named("id", id))
	if err != nil {
		return nil, fmt.Errorf("read the children: %w", err)
	}
	defer rows.Close()
	var out map[string]job.ChildEnd
	for rows.Next() {
		var (
			key, cid, state   string
			result, lastError sql.NullString
		)
		if err := rows.Scan(&key, &cid, &state, &result, &lastError); err != nil {
			return nil, err
		}
		c := job.ChildEnd{State: job.State(state), Error: lastError.String}
		if c.ID, err = uuid.Parse(cid); err != nil {
			return nil, err
		}
		if result.Valid {
			c.Result = json.RawMessage(result.String)
		}
		if out == nil {
			out = make(map[string]job.ChildEnd)
		}
		out[key] = c
	}
	return out, rows.Err()
}

// readSignal reads the signal name of job id as its resumed claim sees
// it: delivered, with its payload, or timed out.
func readSignal(ctx context.Context, tx *jobWrite, id, name string) (*job.Signal, error) {
	var (
		payload   sql.NullString
		delivered sql.NullInt64
	)
	err := tx.QueryRowContext(ctx, signalGetSQL, sql.Named("id", id), sql.Named("name", name)).Scan(&payload, &delivered)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("read the signal: %w", err)
	}
	sig := &job.Signal{Name: name, TimedOut: !delivered.Valid}
	if delivered.Valid && payload.Valid {
		sig.Payload = json.RawMessage(payload.String)
	}
	return sig, nil
}
