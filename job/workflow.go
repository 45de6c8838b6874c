package job

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// A workflow is a set of jobs, its tasks, submitted together, each named
// by a ref unique in the workflow, some of which depend on others: a
// task with dependencies is inserted waiting (StateWaiting, WaitFor
// WaitDependencies) and becomes queued in the transaction that ends its
// last dependency. The rules, decided in Go (task.go; the store applies
// them in the transaction of each final state):
//
//   - A task runs once every dependency ended succeeded. When one ends
//     failed or canceled, the task is canceled at once, its error naming
//     that dependency, and so are its own dependents, transitively
//     (the dependency rule), unless it says RunOnAny: such a task runs
//     once every dependency is final, however each ended, and sees
//     their states and errors in its Inputs.
//   - A task's handler receives its dependencies' ends by ref (Job.Inputs),
//     read from the store when the task is claimed.
//   - The workflow is running until every task is final; it then ends
//     failed if a task failed, else canceled if a task was canceled,
//     else succeeded (WorkflowStateOf).

// RunOn says when a workflow task runs, given how its dependencies ended.
type RunOn string

// The values of RunOn.
const (
	// RunOnSuccess, the default: once every dependency succeeded; a
	// dependency that fails or is canceled cancels the task.
	RunOnSuccess RunOn = "success"
	// RunOnAny: once every dependency is final, however it ended (a
	// cleanup or notify step).
	RunOnAny RunOn = "any"
)

// WaitFor says what a waiting job waits for.
type WaitFor string

// The values of WaitFor.
const (
	// WaitDependencies: a workflow task waits for its dependencies.
	WaitDependencies WaitFor = "dependencies"
	// WaitChildren: a job waits until every child it spawned is final.
	WaitChildren WaitFor = "children"
	// WaitSignal: a job waits for a named signal (without a timeout; a
	// wait with one is a delayed job: see Wait).
	WaitSignal WaitFor = "signal"
)

// WorkflowState is where a workflow is: running until each of its tasks
// is final, then how they ended (WorkflowStateOf).
type WorkflowState string

// The states of a workflow. All but running are final; a retry of one
// of its tasks (or of the workflow) makes a final workflow running again.
const (
	WorkflowRunning   WorkflowState = "running"
	WorkflowSucceeded WorkflowState = "succeeded"
	WorkflowFailed    WorkflowState = "failed"
	WorkflowCanceled  WorkflowState = "canceled"
)

// WorkflowStates lists every workflow state.
var WorkflowStates = []WorkflowState{WorkflowRunning, WorkflowSucceeded, WorkflowFailed, WorkflowCanceled}

// Final reports whether s is not running.
func (s WorkflowState) Final() bool {
	return s == WorkflowSucceeded || s == WorkflowFailed || s == WorkflowCanceled
}

// Valid reports whether s is one of the workflow states.
func (s WorkflowState) Valid() bool {
	for _, v := range WorkflowStates {
		if s == v {
			return true
		}
	}
	return false
}

// WorkflowStateOf is the state of a workflow of tasks tasks of which
// succeeded, failed and canceled are final in each state: running while
// some task is not final; then failed when a task failed, else canceled
// when a task was canceled, else succeeded. A failure outranks a cancel:
// the dependents a failure cancels (the dependency rule) and the tasks an
// operator cancels after a failure do not hide it.
func WorkflowStateOf(tasks, succeeded, failed, canceled int) WorkflowState {
	switch {
	case succeeded+failed+canceled < tasks:
		return WorkflowRunning
	case failed > 0:
		return WorkflowFailed
	case canceled > 0:
		return WorkflowCanceled
	}
	return WorkflowSucceeded
}

// DefaultWorkflowMaxTasks is the default bound of a workflow's tasks.
const DefaultWorkflowMaxTasks = 10000

// Workflow is one row of the workflows table: what a workflow is, without
// its tasks (which are jobs with its WorkflowID).
type Workflow struct {
	ID    uuid.UUID
	Name  string
	State WorkflowState
	// IdempotencyKey names the workflow for as long as it is retained;
	// "" for none.
	IdempotencyKey string
	// TaskCount counts its tasks; Succeeded, Failed and Canceled those
	// final in each state, kept in the transaction of each task's final
	// state.
	TaskCount int
	Succeeded int
	Failed    int
	Canceled  int
	CreatedAt time.Time
	UpdatedAt time.Time
	// FinishedAt is when it last became final; nil while running.
	FinishedAt *time.Time
}

// WorkflowEventKind names an entry of a workflow's journal.
type WorkflowEventKind string

// The workflow journal's event kinds.
const (
	// WorkflowEventSubmitted: the workflow and its tasks were inserted.
	WorkflowEventSubmitted WorkflowEventKind = "submitted"
	// WorkflowEventCancelRequested: an operator canceled the workflow.
	WorkflowEventCancelRequested WorkflowEventKind = "cancel-requested"
	// WorkflowEventRetried: an operator retried the workflow, or one of
	// its failed or canceled tasks, which made it running again.
	WorkflowEventRetried WorkflowEventKind = "retried"
	// WorkflowEventSucceeded, WorkflowEventFailed, WorkflowEventCanceled:
	// its last task became final, and it ended so.
	WorkflowEventSucceeded WorkflowEventKind = "succeeded"
	WorkflowEventFailed    WorkflowEventKind = "failed"
	WorkflowEventCanceled  WorkflowEventKind = "canceled"
)

// WorkflowEvent is one entry of a workflow's journal.
type WorkflowEvent struct {
	// ID is its position in the journal: 1, 2, 3…
	ID     int64
	At     time.Time
	Kind   WorkflowEventKind
	Detail string
}

// WorkflowJournal renders a workflow's journal from its row and the
// entries it stores: "submitted" at created_at, then the stored entries
// (every other entry is stored, by the transaction that makes it).
func WorkflowJournal(w *Workflow, stored []WorkflowEvent) []WorkflowEvent {
	events := make([]WorkflowEvent, 0, len(stored)+1)
	events = append(events, WorkflowEvent{Kind: WorkflowEventSubmitted, At: w.CreatedAt})
	events = append(events, stored...)
	for i := range events {
		events[i].ID = int64(i + 1)
	}
	return events
}

// MarshalWorkflowJournal encodes entries to append to a workflow's
// journal column, as MarshalJournal does a job's; nil for none.
func MarshalWorkflowJournal(events []WorkflowEvent) (json.RawMessage, error) {
	evs := make([]Event, len(events))
	for i, e := range events {
		evs[i] = Event{Kind: EventKind(e.Kind), At: e.At, Detail: e.Detail}
	}
	return MarshalJournal(evs)
}

// ParseWorkflowJournal decodes a workflow's journal column.
func ParseWorkflowJournal(raw []byte) ([]WorkflowEvent, error) {
	evs, err := ParseJournal(raw)
	if err != nil {
		return nil, err
	}
	out := make([]WorkflowEvent, len(evs))
	for i, e := range evs {
		out[i] = WorkflowEvent{Kind: WorkflowEventKind(e.Kind), At: e.At, Detail: e.Detail}
	}
	return out, nil
}

// Input is how one dependency of a task ended, as the task's handler
// receives it (Job.Inputs, by the dependency's ref). A task that runs on
// success sees only succeeded dependencies; one that runs on any
// (RunOnAny) sees failed and canceled ones too, with their errors.
type Input struct {
	State  State
	Result json.RawMessage
	// Error is the dependency's last error; "" for a success.
	Error string
}

// DecodeInput decodes into v the result of the dependency ref of a
// claimed task (see Inputs). It fails, saying why, when the task has no
// such dependency, when that dependency did not succeed (its state and
// error), or when its result does not decode into v; a success without a
// result leaves v as it is.
func (j *Job) DecodeInput(ref string, v any) error {
	in, ok := j.Inputs[ref]
	if !ok {
		return fmt.Errorf("job %s has no input %q", j.ID, ref)
	}
	if in.State != StateSucceeded {
		if in.Error != "" {
			return fmt.Errorf("input %q is %s: %s", ref, in.State, in.Error)
		}
		return fmt.Errorf("input %q is %s", ref, in.State)
	}
	raw := bytes.TrimSpace(in.Result)
	if len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decode input %q: %w", ref, err)
	}
	return nil
}
