package job

import (
	"fmt"
	"time"

	"github.com/google/uuid"
)

// The transitions of workflow tasks (see workflow.go), decided here as
// transition.go decides a job's: a store reads the facts of the rows,
// locked, in the transaction that applies the decisions.

// TaskChange is what a transition of a workflow task writes beyond a
// job's (Transition.Task).
type TaskChange struct {
	// WaitFor is what the task waits for: WaitDependencies when its new
	// state is waiting, "" otherwise.
	WaitFor WaitFor
	// Pending counts its dependencies not final yet, while it waits; 0
	// otherwise.
	Pending int
	// CanceledBy is the dependency whose end canceled it (the dependency
	// rule); the zero UUID otherwise.
	CanceledBy uuid.UUID
}

// Dependency names a dependency of a task and how it ended: a task's
// transitions that depend on one read it.
type Dependency struct {
	ID    uuid.UUID
	Ref   string
	State State
}

// DependencyError is the error, and journal detail, of a task that a
// dependency's end (failed or canceled) cancels: `dependency "encode" failed`.
func DependencyError(d Dependency) string {
	return fmt.Sprintf("dependency %q %s", d.Ref, d.State)
}

// DependenciesEnded decides what becomes of a waiting task whose row says
// f when some of its dependencies became final, leaving pending of them
// not final; ended is the first of those that ended failed or canceled,
// nil when all succeeded. runAt is the task's run_at, which its release
// keeps when later than now.
//
//	a dependency ended failed or canceled, runOn success -> canceled ("canceled", its error naming it)
//	none pending                                         -> queued at the later of now and runAt ("released")
//	otherwise                                            -> waiting, pending updated (no journal entry)
func DependenciesEnded(f Facts, runOn RunOn, pending int, ended *Dependency, runAt, now time.Time) (Transition, error) {
	if f.State != StateWaiting {
		return Transition{}, fmt.Errorf("unblock a %s task: %w", f.State, ErrWrongState)
	}
	t := Transition{From: StateWaiting, State: StateWaiting, Attempt: f.Attempt, Event: Event{Attempt: f.Attempt}}
	switch {
	case ended != nil && runOn != RunOnAny:
		reason := DependencyError(*ended)
		t.end(StateCanceled, now)
		t.Event.Detail, t.LastError = reason, &reason
		t.Task = &TaskChange{CanceledBy: ended.ID}
	case pending <= 0:
		t.requeue(later(runAt, now), EventReleased)
		t.Task = &TaskChange{}
	default:
		// Still waiting: the row's pending count changes, nothing else.
		t.Task = &TaskChange{WaitFor: WaitDependencies, Pending: pending}
		t.AttemptedAt = f.AttemptedAt
		return t, nil
	}
	t.journal(f, now)
	return t, nil
}

// RetryTask decides an operator's retry of a failed or canceled workflow
// task, as Retry does a job's ("manual-retry", attempts reset), given how
// its dependencies stand: queued, due now, when none is pending; waiting
// for the pending ones otherwise. blocked is a dependency that ended
// failed or canceled, for a task that runs on success: the retry is then
// ErrWrongState (retry that dependency, or the workflow, instead), and
// so it is from any state but failed and canceled.
func RetryTask(f Facts, runOn RunOn, pending int, blocked *Dependency, now time.Time) (Transition, error) {
	if blocked != nil && runOn != RunOnAny {
		return Transition{}, fmt.Errorf("dependency %q is %s: retry it, or the workflow: %w", blocked.Ref, blocked.State, ErrWrongState)
	}
	t, err := Retry(f, now)
	if err != nil {
		return Transition{}, err
	}
	t.Task = &TaskChange{}
	if pending > 0 {
		t.State = StateWaiting
		t.Task = &TaskChange{WaitFor: WaitDependencies, Pending: pending}
	}
	return t, nil
}

// Restore decides what becomes of a task that the dependency rule
// canceled (f: canceled) when the dependency dep that stood in its way is
// retried: waiting again for its pending dependencies ("waiting", naming
// dep), its error and attempts cleared; queued, due now, when none is
// pending ("released").
func Restore(f Facts, pending int, dep string, now time.Time) (Transition, error) {
	if f.State != StateCanceled {
		return Transition{}, fmt.Errorf("restore a %s task: %w", f.State, ErrWrongState)
	}
	none := ""
	t := Transition{From: f.State, LastError: &none, Task: &TaskChange{}}
	if pending > 0 {
		t.State, t.RunAt, t.Event.Kind = StateWaiting, now, EventWaiting
		t.Task = &TaskChange{WaitFor: WaitDependencies, Pending: pending}
	} else {
		t.requeue(now, EventReleased)
	}
	t.Event.Detail = fmt.Sprintf("dependency %q retried", dep)
	t.journal(f, now)
	return t, nil
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// TaskCounts counts a workflow's tasks final in each state (or, as a
// change, the tasks that became final in each state less those that left
// it).
type TaskCounts struct {
	Succeeded, Failed, Canceled int
}

// Count adds n tasks of state s (a final state; others count nothing).
func (c *TaskCounts) Count(s State, n int) {
	switch s {
	case StateSucceeded:
		c.Succeeded += n
	case StateFailed:
		c.Failed += n
	case StateCanceled:
		c.Canceled += n
	}
}

// Zero reports whether c counts nothing.
func (c TaskCounts) Zero() bool { return c == TaskCounts{} }

// WorkflowTransition is a decided change of a workflow's row: its
// counters, its state, its journal entries.
type WorkflowTransition struct {
	From  WorkflowState
	State WorkflowState
	// Counts are its tasks final in each state, after the change.
	Counts TaskCounts
	// FinishedAt is set (now) when State is final, nil otherwise.
	FinishedAt *time.Time
	// Events are the entries to append to its journal.
	Events []WorkflowEvent
	// Finished: it became final (from running), which the outbox records
	// (workflow.finished).
	Finished bool
}

// WorkflowTasksChanged decides what becomes of workflow w when its tasks'
// final counts change by delta in one transaction, at now: its new
// counters and state (WorkflowStateOf), journaled by the event that bears
// the state's name when it ends, and "retried" when it runs again (unless
// events, the caller's own entries, which go first, hold one).
func WorkflowTasksChanged(w *Workflow, delta TaskCounts, events []WorkflowEvent, now time.Time) WorkflowTransition {
	c := TaskCounts{Succeeded: w.Succeeded + delta.Succeeded, Failed: w.Failed + delta.Failed, Canceled: w.Canceled + delta.Canceled}
	t := WorkflowTransition{From: w.State, Counts: c, Events: events,
		State: WorkflowStateOf(w.TaskCount, c.Succeeded, c.Failed, c.Canceled)}
	if t.State.Final() {
		t.FinishedAt = w.FinishedAt
	}
	switch {
	case t.State.Final() && !w.State.Final():
		t.FinishedAt, t.Finished = &now, true
		t.Events = append(t.Events, WorkflowEvent{Kind: WorkflowEventKind(t.State), At: now})
	case !t.State.Final() && w.State.Final() && !hasKind(events, WorkflowEventRetried):
		t.Events = append(t.Events, WorkflowEvent{Kind: WorkflowEventRetried, At: now})
	}
	return t
}

func hasKind(events []WorkflowEvent, k WorkflowEventKind) bool {
	for _, e := range events {
		if e.Kind == k {
			return true
		}
	}
	return false
}

// CanceledWithWorkflow is the journal detail of a task its workflow's cancel
// canceled, or asked to stop.
const CanceledWithWorkflow = "workflow canceled"

// CancelTask decides the cancel of a task by its workflow's cancel: as
// Cancel decides (a waiting or queued task canceled at once, a running
// one asked to stop, a repeated request writing nothing), journaled with
// the detail CanceledWithWorkflow.
func CancelTask(f Facts, now time.Time) (Transition, bool, error) {
	t, write, err := Cancel(f, now)
	if err != nil || !write {
		return t, write, err
	}
	t.Event.Detail = CanceledWithWorkflow
	t.Events[len(t.Events)-1].Detail = CanceledWithWorkflow
	return t, true, nil
}
