package job

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Durable execution (docs/steps-and-children.md): a running job records
// the steps it completed, spawns children, and ends its attempt waiting
// — for its children, for a signal, or until a time — to be claimed
// again, as the same job, when what it waits for comes. Its transitions
// are decided here, as transition.go decides the others:
//
//	running --wait for children, some not final--> waiting (wait_for children, pending counting them)
//	running --wait for a signal not sent yet-----> waiting (wait_for signal)
//	running --wait for a signal with a timeout---> queued at now + timeout (a delayed job)
//	running --wait until a time------------------> queued at that time (a delayed job)
//	running --wait for what has come already-----> queued now ("woken")
//	waiting --last child final / signal sent-----> queued now ("woken")
//	queued (a timed signal wait) --signal sent---> queued now ("woken")
//
// A wait is not an attempt: the attempt that waits is given back, so the
// claim that resumes the job runs it under the same attempt number, and
// waits never use up max_attempts. A cancel request wins over a wait as
// it does over a release (cancelWins). A timed wait is a delayed job
// (state queued, run_at the time it ends) so that no reaper is needed
// for it to end: the claim index is its timer.

// WaitUntil is the For of a wait that only sleeps (WaitRequest.Until).
// It is never a waiting job's WaitFor: such a wait is a delayed job.
const WaitUntil WaitFor = "until"

// Default limits of durable execution (the stores' configurable
// defaults: see StepLimits).
const (
	// DefaultMaxSteps bounds the steps one job records.
	DefaultMaxSteps = 1000
	// DefaultMaxStepResult bounds the size of one step's result, in
	// bytes of JSON.
	DefaultMaxStepResult = 1 << 20
	// DefaultMaxChildren bounds the children one job spawns.
	DefaultMaxChildren = 10000
	// MaxSignalTimeout bounds a signal wait's timeout.
	MaxSignalTimeout = 366 * 24 * time.Hour
)

// Step is a step a job completed: its name, unique in the job, its
// result, the attempt that ran it and when it ran.
type Step struct {
	Name       string
	Result     json.RawMessage
	Attempt    int
	StartedAt  time.Time
	FinishedAt time.Time
}

// Duration is how long the step ran.
func (s Step) Duration() time.Duration { return s.FinishedAt.Sub(s.StartedAt) }

// ChildEnd is where a child stands, as its parent reads it on the claim
// that resumes it (Resume.Children, by the key the parent gave it).
type ChildEnd struct {
	ID     uuid.UUID
	State  State
	Result json.RawMessage
	// Error is the child's last error; "" for none.
	Error string
}

// Signal is the signal a resumed job waited for (Resume.Signal): its
// name and payload, or TimedOut when its wait's timeout passed first.
type Signal struct {
	Name     string
	Payload  json.RawMessage
	TimedOut bool
}

// Resume is what a claimed job resumes from (Job.Resume).
type Resume struct {
	// Steps are its completed steps, by name.
	Steps map[string]Step
	// Children are the children it spawned, by key.
	Children map[string]ChildEnd
	// Signal is the signal of its last signal wait; nil for none.
	Signal *Signal
}

// DecodeChild decodes into v the result of the child key of a resumed
// job. It fails, saying why, when there is no such child or the child
// did not succeed; a success without a result leaves v as it is.
func (r *Resume) DecodeChild(key string, v any) error {
	var c ChildEnd
	ok := false
	if r != nil {
		c, ok = r.Children[key]
	}
	if !ok {
		return fmt.Errorf("no child %q", key)
	}
	if c.State != StateSucceeded {
		if c.Error != "" {
			return fmt.Errorf("child %q is %s: %s", key, c.State, c.Error)
		}
		return fmt.Errorf("child %q is %s", key, c.State)
	}
	if len(c.Result) == 0 || string(c.Result) == "null" {
		return nil
	}
	if err := json.Unmarshal(c.Result, v); err != nil {
		return fmt.Errorf("decode child %q: %w", key, err)
	}
	return nil
}

// WaitRequest is how a lease holder ends its attempt waiting.
type WaitRequest struct {
	// For is WaitChildren, WaitSignal or WaitUntil.
	For WaitFor
	// Signal is the name of the signal a WaitSignal waits for.
	Signal string
	// Timeout bounds a WaitSignal; 0 waits for as long as it takes.
	Timeout time.Duration
	// Until is when a WaitUntil ends.
	Until time.Time
}

// Check refuses a wait no store can apply, naming the field.
func (w WaitRequest) Check() error {
	switch w.For {
	case WaitChildren:
	case WaitSignal:
		if w.Signal == "" {
			return Invalid("signal", "is required")
		}
		if err := CheckName("signal", w.Signal); err != nil {
			return err
		}
		if w.Timeout < 0 || w.Timeout > MaxSignalTimeout {
			return Invalid("timeout", "must be between 0 and %s, got %s", MaxSignalTimeout, w.Timeout)
		}
	case WaitUntil:
		if w.Until.IsZero() {
			return Invalid("until", "is required")
		}
	default:
		return Invalid("for", "must be %q or %q (or give until), got %q", WaitChildren, WaitSignal, w.For)
	}
	if w.For != WaitSignal && (w.Signal != "" || w.Timeout != 0) {
		return Invalid("signal", "only a wait for a signal names one")
	}
	return nil
}

// WaitFacts is what a wait reads besides the job's facts, in its
// transaction: how many of the job's children are not final, and
// whether the signal it waits for was sent and not delivered yet.
type WaitFacts struct {
	PendingChildren int
	SignalKept      bool
}

// Wait decides what a lease holder's wait does to a running job (see
// the table above); w must pass Check.
func Wait(f Facts, w WaitRequest, wf WaitFacts, now time.Time) (Transition, error) {
	if f.State != StateRunning {
		return Transition{}, fmt.Errorf("wait in a %s job: %w", f.State, ErrWrongState)
	}
	t := leaveRunning(f)
	t.Attempt = f.Attempt - 1 // a wait is not an attempt: the attempt resumes
	t.Task = &TaskChange{}
	switch w.For {
	case WaitChildren:
		if wf.PendingChildren > 0 {
			t.wait(WaitChildren, fmt.Sprintf("children (%d not final)", wf.PendingChildren))
			t.Task.Pending = wf.PendingChildren
		} else {
			t.requeue(now, EventWoken)
			t.Event.Detail = "children final"
		}
	case WaitSignal:
		switch {
		case wf.SignalKept:
			t.requeue(now, EventWoken)
			t.Event.Detail = fmt.Sprintf("signal %q", w.Signal)
		case w.Timeout > 0:
			t.requeue(now.Add(w.Timeout), EventWaiting)
			t.Event.Detail = timedSignalDetail(w.Signal) + w.Timeout.String() + ")"
		default:
			t.wait(WaitSignal, fmt.Sprintf("signal %q", w.Signal))
		}
	case WaitUntil:
		if w.Until.After(now) {
			t.requeue(w.Until, EventWaiting)
			t.Event.Detail = "until " + w.Until.UTC().Format(time.RFC3339Nano)
		} else {
			t.requeue(now, EventWoken)
			t.Event.Detail = "until " + w.Until.UTC().Format(time.RFC3339Nano)
		}
	default:
		return Transition{}, Invalid("for", "unknown wait %q", w.For)
	}
	t = cancelWins(f, t, now)
	if t.State == StateCanceled {
		t.Task = &TaskChange{}
	}
	t.journal(f, now)
	return t, nil
}

// timedSignalDetail is how the detail of the journal entry of a timed
// wait for the signal name begins (its timeout follows, then ")").
func timedSignalDetail(name string) string { return fmt.Sprintf("signal %q (timeout ", name) }

// InTimedSignalWait reports whether a queued job whose last stored
// journal entry is last is in a timed wait for the signal name: that
// entry is the wait's ("waiting", for that signal). A job queued again
// since its wait ended — claimed at its timeout, then a retry's delay, a
// release, a rescue, a sleep — has a later entry, and is not: a signal
// sent to it is kept for its next wait.
func InTimedSignalWait(last Event, name string) bool {
	return last.Kind == EventWaiting && strings.HasPrefix(last.Detail, timedSignalDetail(name))
}

// wait makes t a transition to waiting for what, journaled "waiting".
func (t *Transition) wait(what WaitFor, detail string) {
	t.State = StateWaiting
	t.RunAt = time.Time{}
	t.FinishedAt = nil
	t.Event.Kind = EventWaiting
	t.Event.Detail = detail
	t.Task.WaitFor = what
}

// Wake decides what the coming of what a job waits for does to it: a
// waiting job (waiting for a signal, or the last of its children ended)
// or a queued one (a timed signal wait, when its signal is sent) is
// queued, due now ("woken", with detail saying why).
func Wake(f Facts, detail string, now time.Time) (Transition, error) {
	if f.State != StateWaiting && f.State != StateQueued {
		return Transition{}, fmt.Errorf("wake a %s job: %w", f.State, ErrWrongState)
	}
	t := Transition{From: f.State, Attempt: f.Attempt, CancelRequested: f.CancelRequested,
		Event: Event{Attempt: f.Attempt}, Task: &TaskChange{}}
	t.requeue(now, EventWoken)
	t.Event.Detail = detail
	t.journal(f, now)
	return t, nil
}

// ChildrenEnded decides what becomes of a parent whose row says f when
// some of its children became final, leaving pending of them not final:
// a parent waiting for its children is woken when none is pending
// (Wake), and counts them down otherwise; any other parent is left
// alone (write false).
func ChildrenEnded(f Facts, pending int, now time.Time) (t Transition, write bool, err error) {
	if f.State != StateWaiting || f.WaitFor != WaitChildren {
		return Transition{}, false, nil
	}
	if pending > 0 {
		t = Transition{From: StateWaiting, State: StateWaiting, Attempt: f.Attempt, Event: Event{Attempt: f.Attempt},
			Task: &TaskChange{WaitFor: WaitChildren, Pending: pending}, AttemptedAt: f.AttemptedAt}
		return t, true, nil
	}
	t, err = Wake(f, "children final", now)
	return t, err == nil, err
}

// CheckStepName refuses a step name that is empty or not a name as
// queues and kinds are (CheckName), naming field.
func CheckStepName(field, name string) error {
	if name == "" {
		return Invalid(field, "is required")
	}
	return CheckName(field, name)
}
