package job

import (
	"encoding/json"
	"fmt"
	"time"
)

// The job state machine of docs/design.md, decided here and nowhere
// else. A store reads the Facts of a job's row, with the row locked (or
// inside its one write transaction), asks one of the functions below for
// the Transition, and writes it in the same transaction, fenced by the
// state and lease token it read. The database only fences and applies: no
// SQL decides where a job goes, and the journal entries come from here
// (see journal.go: a transition appends its entry to the row's stored
// journal, except a success, whose entry the row implies).
//
// Six families of transitions leave a state other than by a claim:
//
//   - Finish: a lease holder reports an outcome of a running job.
//   - Rescue: the reaper takes back a running job whose lease expired.
//   - TimeOut: the reaper ends an attempt that passed its deadline.
//   - Cancel: an operator cancels a queued job or asks a running one to stop.
//   - Retry: an operator puts a failed or canceled job back to queued.
//   - Rerun: an operator puts a finished job back to queued, keeping its
//     result readable until the claim of the new attempt.
//
// A cancel request wins: once it is requested, a running job never goes
// back to the queue, whatever its holder or the reaper would do, and ends
// canceled; only a success still succeeds. cancelWins is the one place
// that rule lives.

// OutcomeStatus is what the lease holder says became of a job.
type OutcomeStatus string

// Outcomes a lease holder can report.
const (
	// OutcomeSucceeded: state succeeded, with Result.
	OutcomeSucceeded OutcomeStatus = "succeeded"
	// OutcomeFailed: with Retryable and attempts left, state queued with
	// run_at now + RetryDelay (journal "retried"); otherwise state failed.
	// When cancel was requested, state canceled instead, either way.
	// Error is kept as the job's last error in every case.
	OutcomeFailed OutcomeStatus = "failed"
	// OutcomeCanceled: the holder honoured a cancel request; state canceled.
	OutcomeCanceled OutcomeStatus = "canceled"
	// OutcomeReleased: the holder gives the job back unworked (graceful
	// shutdown); state queued, run_at now, the attempt not counted
	// (journal "requeued"). When cancel was requested, state canceled
	// instead (the attempt stays counted).
	OutcomeReleased OutcomeStatus = "released"
)

// Valid reports whether s is one of the four outcomes.
func (s OutcomeStatus) Valid() bool {
	switch s {
	case OutcomeSucceeded, OutcomeFailed, OutcomeCanceled, OutcomeReleased:
		return true
	}
	return false
}

// Outcome is what a lease holder reports of the job it ran, without the
// lease that fences the report.
type Outcome struct {
	Status OutcomeStatus
	// Result is a success's result (JSON, or nil for none).
	Result json.RawMessage
	// Error is a failure's message, or why a cancel was honoured.
	Error string
	// Retryable failures go back to the queue while attempts are left,
	// after RetryDelay (a negative delay is none).
	Retryable  bool
	RetryDelay time.Duration
	// Throttle, on a failure, says the downstream the job calls is
	// overloaded: the job is queued again after Throttle without counting
	// the attempt (whatever Retryable says and attempts are left), and
	// no job of its queue, or of its partition (flow.Limits.ThrottleBy),
	// starts on any node before then. Zero for none; at most MaxThrottle.
	Throttle time.Duration
}

// MaxThrottle bounds Outcome.Throttle.
const MaxThrottle = 24 * time.Hour

// Check refuses an outcome no store can apply: an unknown status, a
// result that is not JSON every store keeps (CheckJSON), an error text
// with NUL or invalid UTF-8 (CheckText). Stores call it for every outcome
// of a batch before they write anything.
func (o Outcome) Check() error {
	if !o.Status.Valid() {
		return Invalid("status", "unknown outcome status %q", o.Status)
	}
	if err := CheckText("error", o.Error); err != nil {
		return err
	}
	if o.Throttle < 0 || o.Throttle > MaxThrottle {
		return Invalid("throttle", "must be between 0 and %s, got %s", MaxThrottle, o.Throttle)
	}
	if o.Throttle > 0 && o.Status != OutcomeFailed {
		return Invalid("throttle", "only a failure can throttle, not a %s outcome", o.Status)
	}
	return CheckJSON("result", o.Result)
}

// LeaseExpired is the error and journal detail of a job whose lease
// expired (Rescue).
const LeaseExpired = "lease expired"

// Facts is what a transition reads of a job's row: the values a
// concurrent write could change between a read and a write, so a store
// reads them with the row locked, in the transaction that applies the
// decision.
type Facts struct {
	State           State
	Attempt         int
	MaxAttempts     int
	CancelRequested bool
	// AttemptedAt, LeaseOwner and FinishedAt are what the row's implied
	// journal entries are rendered from (see Journal): the current claim
	// (at AttemptedAt, detail LeaseOwner), while AttemptedAt is set, and a
	// success (at FinishedAt).
	AttemptedAt *time.Time
	LeaseOwner  string
	FinishedAt  *time.Time
	// Rerun is the job's rerun counter (Rerun decides from it) and
	// Timeout its own timeout (TimeOut's error names it; 0 when the
	// deadline came from its queue's default).
	Rerun   int
	Timeout time.Duration
	// WaitFor is what a waiting job waits for ("" in any other state).
	WaitFor WaitFor
}

// AttemptsLeft reports whether the job may run again after the attempt
// its counter names.
func (f Facts) AttemptsLeft() bool { return f.Attempt < f.MaxAttempts }

// FactsOf returns the facts of j.
func FactsOf(j *Job) Facts {
	return Facts{State: j.State, Attempt: j.Attempt, MaxAttempts: j.MaxAttempts, CancelRequested: j.CancelRequested,
		AttemptedAt: j.AttemptedAt, LeaseOwner: j.LeaseOwner, FinishedAt: j.FinishedAt, Rerun: j.Rerun, Timeout: j.Timeout,
		WaitFor: j.WaitFor}
}

// Transition is a decided change of one job: the values its row takes and
// the journal entries that record the change. A store writes all of them
// (and updated_at, its transaction's time) in one statement fenced by the
// state, and for a lease holder the lease token, that the Facts had: it
// sets attempted_at to AttemptedAt and appends Events to the row's stored
// journal, deciding nothing. A job holds a lease exactly while it runs: a
// transition out of running clears the lease token and expiry, any other
// leaves them as they are, and so does its deadline, which a transition
// out of running clears.
type Transition struct {
	// From is the state the Facts had: the fence.
	From State
	// State is the job's new state.
	State State
	// RunAt is the new run_at; zero keeps the row's. Every transition to
	// queued sets it.
	RunAt time.Time
	// Attempt is the attempt counter after the transition.
	Attempt int
	// FinishedAt is the new finished_at: set (now) when State is final,
	// nil (cleared) otherwise.
	FinishedAt *time.Time
	// CancelRequested is the new cancel flag.
	CancelRequested bool
	// Result, when not nil, replaces the job's result.
	Result json.RawMessage
	// LastError, when not nil, replaces the job's last error.
	LastError *string
	// Event is the journal entry that records the change (its Kind, At,
	// Attempt and Detail): the last of Events, or, for a success, the
	// entry the row it leaves implies (state succeeded, finished_at).
	Event Event
	// Events are the entries to append to the row's stored journal, in
	// order (without IDs and JobIDs): the entries the row implied that
	// would otherwise render in the wrong place (its current claim, the
	// success of a job that leaves succeeded), then Event. None for a
	// success.
	Events []Event
	// AttemptedAt is the new attempted_at: the Facts' for a success (its
	// claim stays implied), nil after any other transition (the claim is
	// in Events).
	AttemptedAt *time.Time
	// Rerun, set only by Rerun, is what a rerun changes besides: the
	// rerun counter, the previous state, the previous result (the row's
	// result, which it keeps) and, when given, the args.
	Rerun *RerunChange
	// Task, set only by the transitions of workflow tasks that wait or
	// leave waiting (task.go, and Cancel of a waiting job), is what
	// such a transition writes besides: what the job waits for, its
	// pending dependencies, the dependency that canceled it. Nil leaves
	// them as they are.
	Task *TaskChange
}

// RerunChange is what a rerun writes beyond a transition to queued.
type RerunChange struct {
	// Count is the job's new rerun counter.
	Count int
	// PreviousState is the state the job leaves; its result becomes the
	// previous result too.
	PreviousState State
	// Args, when not nil, replace the job's args, and ArgsHash its args
	// hash ("" for a job without active-duplicate dedupe).
	Args     json.RawMessage
	ArgsHash string
}

// Finish decides what a lease holder's outcome does to a job whose row
// says f (running, the lease held: the store's fence). o must pass Check.
//
//	succeeded                        -> succeeded ("succeeded")
//	failed with a throttle           -> queued at now + throttle, attempt given back ("throttled")
//	failed, retryable, attempts left -> queued at now + delay ("retried")
//	failed otherwise                 -> failed ("failed")
//	canceled                         -> canceled ("canceled")
//	released                         -> queued at now, attempt given back ("requeued")
//
// and a cancel request wins over all but a success (cancelWins). A failure
// keeps its error as the job's last error whatever the job becomes.
func Finish(f Facts, o Outcome, now time.Time) (Transition, error) {
	if f.State != StateRunning {
		return Transition{}, fmt.Errorf("finish a %s job: %w", f.State, ErrWrongState)
	}
	if !o.Status.Valid() {
		return Transition{}, Invalid("status", "unknown outcome status %q", o.Status)
	}
	t := leaveRunning(f)
	switch o.Status {
	case OutcomeSucceeded:
		t.end(StateSucceeded, now)
		t.Result = o.Result
	case OutcomeFailed:
		t.Event.Detail = o.Error
		t.LastError = &o.Error
		if o.Throttle > 0 {
			t.requeue(now.Add(o.Throttle), EventThrottled)
			t.Attempt = f.Attempt - 1 // the downstream refused it: not an attempt
		} else if o.Retryable && f.AttemptsLeft() {
			t.requeue(now.Add(max(o.RetryDelay, 0)), EventRetried)
		} else {
			t.end(StateFailed, now)
		}
	case OutcomeCanceled:
		t.Event.Detail = o.Error
		t.end(StateCanceled, now)
	case OutcomeReleased:
		t.requeue(now, EventRequeued)
		t.Attempt = f.Attempt - 1 // the attempt it was given does not count
	}
	t = cancelWins(f, t, now)
	t.journal(f, now)
	return t, nil
}

// SucceededState and SucceededEvent are what Finish decides for every
// success, whatever the row says beyond its held lease: the job's attempt
// stays as it is and the journal names it, in the entry the row implies
// (state succeeded, finished_at): nothing is appended to the stored
// journal and attempted_at stays as it is. A store may therefore apply a
// batch of successes in one fenced statement without reading the rows
// first, writing the state, the result and finished_at, and leaving the
// attempt, attempted_at and the journal as they are.
// TestFinishSuccessReadsNothing and TestHotPathsWriteNoJournal hold
// Finish to it.
const (
	SucceededState = StateSucceeded
	SucceededEvent = EventSucceeded
)

// Rescue decides what becomes of a running job whose lease expired: back
// to queued, due now, its attempt counted ("rescued"), or failed when its
// attempts are used up ("failed", last error "lease expired"); a cancel
// request wins (cancelWins).
func Rescue(f Facts, now time.Time) (Transition, error) {
	if f.State != StateRunning {
		return Transition{}, fmt.Errorf("rescue a %s job: %w", f.State, ErrWrongState)
	}
	t := leaveRunning(f)
	t.Event.Detail = LeaseExpired
	if f.AttemptsLeft() {
		t.requeue(now, EventRescued)
	} else {
		t.end(StateFailed, now)
	}
	t = cancelWins(f, t, now)
	if t.State == StateFailed {
		reason := LeaseExpired
		t.LastError = &reason
	}
	t.journal(f, now)
	return t, nil
}

// Cancel decides an operator's cancel: a queued or waiting job is
// canceled at once ("canceled"); a running one is asked to stop (cancel requested,
// "cancel-requested"), and its holder ends it. write is false for a
// running job whose cancel was already requested: the cancel is
// idempotent and writes nothing, not even a journal entry. ErrWrongState
// when the job is final.
func Cancel(f Facts, now time.Time) (t Transition, write bool, err error) {
	t = Transition{From: f.State, State: f.State, Attempt: f.Attempt, CancelRequested: f.CancelRequested,
		Event: Event{Attempt: f.Attempt}}
	switch {
	case f.State == StateQueued:
		t.end(StateCanceled, now)
	case f.State == StateWaiting:
		t.end(StateCanceled, now)
		t.Task = &TaskChange{}
	case f.State == StateRunning && f.CancelRequested:
		return Transition{}, false, nil
	case f.State == StateRunning:
		t.CancelRequested = true
		t.Event.Kind = EventCancelRequested
	default:
		return Transition{}, false, fmt.Errorf("job is %s: %w", f.State, ErrWrongState)
	}
	t.journal(f, now)
	return t, true, nil
}

// Retry decides an operator's retry of a failed or canceled job: queued
// again, due now, its attempts and cancel request reset
// ("manual-retry", naming attempt 0). ErrWrongState from any other state.
func Retry(f Facts, now time.Time) (Transition, error) {
	if f.State != StateFailed && f.State != StateCanceled {
		return Transition{}, fmt.Errorf("job is %s: %w", f.State, ErrWrongState)
	}
	t := Transition{From: f.State}
	t.requeue(now, EventManualRetry)
	t.journal(f, now)
	return t, nil
}

// TimedOut is the error and journal detail of an attempt that passed its
// deadline (TimeOut); timeout, when known, is named.
func TimedOut(timeout time.Duration) string {
	if timeout <= 0 {
		return "timed out: the attempt passed its deadline"
	}
	return "timed out after " + timeout.String()
}

// TimeOut decides what becomes of a running job whose attempt passed its
// deadline (claim + timeout): the attempt is over whatever its holder
// does, its writes refused like a lost lease's. Back to queued at
// now + retryDelay while attempts are left, else failed; journaled
// "timed-out" either way, with the error (and last error) TimedOut
// says; a cancel request wins (cancelWins: "canceled").
func TimeOut(f Facts, now time.Time, retryDelay time.Duration) (Transition, error) {
	if f.State != StateRunning {
		return Transition{}, fmt.Errorf("time out a %s job: %w", f.State, ErrWrongState)
	}
	reason := TimedOut(f.Timeout)
	t := leaveRunning(f)
	t.Event.Detail = reason
	t.LastError = &reason
	if f.AttemptsLeft() {
		t.requeue(now.Add(max(retryDelay, 0)), EventTimedOut)
	} else {
		t.end(StateFailed, now)
		t.Event.Kind = EventTimedOut
	}
	t = cancelWins(f, t, now)
	t.journal(f, now)
	return t, nil
}

// Rerun decides an operator's rerun of a finished job (succeeded, failed
// or canceled): queued again, due now, its attempts and cancel request
// reset, its rerun counter incremented, its state and result kept as the
// previous ones ("rerun-requested", naming attempt 0, detail "rerun N").
// The result stays the job's result, readable, until the claim of the
// new attempt clears it (and hands it to the handler as the previous
// result). newArgs, when not nil, become the job's args, with argsHash.
//
// A rerun is idempotent: a job queued or running because of a rerun
// (rerun counter above 0, not finished since) is re-run already, and a
// rerun of it without different args (sameArgs: none given, or equal to
// the job's) returns write false and writes nothing, not even a journal
// entry. Any other rerun of a queued or running job is ErrWrongState.
func Rerun(f Facts, now time.Time, newArgs json.RawMessage, argsHash string, sameArgs bool) (t Transition, write bool, err error) {
	if !f.State.Final() {
		if f.Rerun > 0 && sameArgs {
			return Transition{}, false, nil
		}
		return Transition{}, false, fmt.Errorf("job is %s: %w", f.State, ErrWrongState)
	}
	t = Transition{From: f.State}
	t.requeue(now, EventRerunRequested)
	t.Rerun = &RerunChange{Count: f.Rerun + 1, PreviousState: f.State}
	t.Event.Detail = fmt.Sprintf("rerun %d", f.Rerun+1)
	if newArgs != nil && !sameArgs {
		t.Rerun.Args, t.Rerun.ArgsHash = newArgs, argsHash
		t.Event.Detail += " with new args"
	}
	t.journal(f, now)
	return t, true, nil
}

// RequestsCancel reports whether t asks the job's running holder to stop:
// the store then notifies the holder once t has committed.
func (t Transition) RequestsCancel() bool {
	return t.Event.Kind == EventCancelRequested
}

// cancelWins is the cancel override, the one place it lives: when cancel
// was requested, a transition that would take the job anywhere but
// succeeded (back to the queue, or failed) ends it canceled instead,
// journaled "canceled", with its attempt counted; the reason (detail, last
// error) of the transition it overrides is kept.
func cancelWins(f Facts, t Transition, now time.Time) Transition {
	if !f.CancelRequested || t.State == StateSucceeded || t.State == StateCanceled {
		return t
	}
	t.Attempt = f.Attempt
	t.Event.Attempt = f.Attempt
	t.end(StateCanceled, now)
	return t
}

// leaveRunning is the start of every transition out of running: the
// journal names the attempt that ran.
func leaveRunning(f Facts) Transition {
	return Transition{From: StateRunning, Attempt: f.Attempt, CancelRequested: f.CancelRequested,
		Event: Event{Attempt: f.Attempt}}
}

// end makes t a transition to the final state s, at now, journaled by
// the event that bears the state's name.
func (t *Transition) end(s State, now time.Time) {
	t.State = s
	t.RunAt = time.Time{}
	t.FinishedAt = &now
	t.Event.Kind = EventKind(s)
}

// requeue makes t a transition back to queued, due at runAt, journaled
// kind.
func (t *Transition) requeue(runAt time.Time, kind EventKind) {
	t.State = StateQueued
	t.RunAt = runAt
	t.FinishedAt = nil
	t.Event.Kind = kind
}

// journal completes t, decided from f at now, with the entries the store
// appends to the row's stored journal and the new attempted_at. A success
// appends nothing: the row it leaves implies its entry, after the claim
// it leaves implied too. Any other transition appends its own entry
// (Event, at now), after storing the entries the row implied, which would
// otherwise render after it (the current claim) or not at all (the
// success of a job that leaves succeeded); no claim is implied after it.
func (t *Transition) journal(f Facts, now time.Time) {
	t.Event.At = now
	if t.State == StateSucceeded && f.State != StateSucceeded {
		t.Events, t.AttemptedAt = nil, f.AttemptedAt
		return
	}
	t.Events = append(implied(f), t.Event)
	t.AttemptedAt = nil
}
