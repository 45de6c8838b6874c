// Package job holds jobd's domain types: the job row, its states, progress,
// journal events and the errors every layer shares. It knows nothing of SQL
// or HTTP.
package job

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// State is where a job is in its lifecycle.
type State string

// The six states of a job. Succeeded, failed and canceled are final.
// A waiting job is not queued: it is never claimed and holds no lease
// until what it waits for (Job.WaitFor) moves it to queued, or it ends
// canceled.
const (
	StateWaiting   State = "waiting"
	StateQueued    State = "queued"
	StateRunning   State = "running"
	StateSucceeded State = "succeeded"
	StateFailed    State = "failed"
	StateCanceled  State = "canceled"
)

// States lists every state, in lifecycle order.
var States = []State{StateWaiting, StateQueued, StateRunning, StateSucceeded, StateFailed, StateCanceled}

// Final reports whether no transition leaves s except an operator's retry.
func (s State) Final() bool {
	return s == StateSucceeded || s == StateFailed || s == StateCanceled
}

// Valid reports whether s is one of the six states.
func (s State) Valid() bool {
	for _, v := range States {
		if s == v {
			return true
		}
	}
	return false
}

// Defaults taken from the source documents (docs/design.md).
const (
	DefaultQueue       = "default"
	DefaultPriority    = 100
	DefaultMaxAttempts = 5
	DefaultLeaseTTL    = 60 * time.Second
)

// Progress is what a running job last reported about itself.
type Progress struct {
	Phase string `json:"phase,omitempty"`
	Done  int64  `json:"done"`
	Total int64  `json:"total"`
	// Items carries per-item detail (for example the state of each file of a
	// batch); nil when the job reports none.
	Items json.RawMessage `json:"items,omitempty"`
}

// Job is one row of the jobs table.
type Job struct {
	ID       uuid.UUID
	Queue    string
	Kind     string
	Args     json.RawMessage
	State    State
	Priority int
	RunAt    time.Time

	Attempt     int
	MaxAttempts int
	LeaseTTL    time.Duration

	// LeaseToken is the fencing token of the current claim; zero unless the
	// job is running.
	LeaseToken     uuid.UUID
	LeaseOwner     string
	LeaseExpiresAt *time.Time
	HeartbeatAt    *time.Time

	LockKey        string
	PartitionKey   string
	IdempotencyKey string
	// ArgsHash is the SHA-256 of the canonical (queue, kind, args), set only
	// when the job was submitted with active-duplicate dedupe.
	ArgsHash string

	// Requires and Prefers are the job's capability rules (see
	// InsertParams); nil when it has none.
	Requires []string
	Prefers  []string

	CancelRequested bool
	Progress        Progress
	Checkpoint      json.RawMessage
	Result          json.RawMessage
	LastError       string
	// TraceParent is the W3C traceparent of the trace its submitter
	// started (see ValidTraceParent); "" for none. Each execution of the
	// job is a span of that trace.
	TraceParent string
	// CallbackURL is where jobd POSTs the job once it is final (every
	// time it becomes final: a retried job calls it again); "" for none.
	CallbackURL string

	CreatedAt  time.Time
	StartedAt  *time.Time
	FinishedAt *time.Time
	UpdatedAt  time.Time
	// AttemptedAt is when the current attempt was claimed, while the row
	// implies that claim's journal entry (see Journal): nil before the
	// first claim and once a later transition stored the entry.
	AttemptedAt *time.Time

	// Schedule names the schedule that made the job, and ScheduledFor is
	// its tick (the time of the trigger, for a schedule's trigger); ""
	// and nil for a job made otherwise.
	Schedule     string
	ScheduledFor *time.Time
	// Timeout bounds the run time of each attempt at the server (0:
	// none): Deadline, the current attempt's claim + its timeout, is when
	// the attempt ends whatever its holder does (see TimeOut). Deadline
	// is nil unless the job runs under a timeout (its own, or its queue's
	// default, which the claim applied).
	Timeout  time.Duration
	Deadline *time.Time
	// Rerun counts the operator's re-runs of the job (see Rerun).
	// PreviousState and PreviousResult are the state and result the job
	// had when it was last re-run ("" and nil before): the result stays
	// the job's Result too until the claim of the re-run's first attempt
	// clears it, so that readers keep the old output until then.
	Rerun          int
	PreviousState  State
	PreviousResult json.RawMessage

	// WorkflowID is the workflow the job is a task of, and Ref its name
	// in it (see Workflow); the zero UUID and "" for a job outside any
	// workflow.
	WorkflowID uuid.UUID
	Ref        string
	// RunOn says when a task runs given how its dependencies ended
	// (RunOnSuccess, RunOnAny); "" outside a workflow.
	RunOn RunOn
	// WaitFor is what a waiting job waits for (WaitDependencies); "" in
	// any other state.
	WaitFor WaitFor
	// Dependencies counts the tasks a task depends on, and Pending those
	// of them not final yet, while the task waits for them (0 otherwise).
	Dependencies int
	Pending      int
	// CanceledBy is the dependency whose failure or cancel canceled the
	// task (the dependency rule: see Workflow); the zero UUID otherwise.
	CanceledBy uuid.UUID
	// Inputs are the results of a claimed task's dependencies, by ref
	// (see Input): set by the claim that hands the task out, read from
	// the store then, never stored in the task's row; nil otherwise.
	Inputs map[string]Input

	// ParentID is the job that spawned this one (see Child), and
	// ChildKey the key it gave it; the zero UUID and "" otherwise.
	ParentID uuid.UUID
	ChildKey string
	// Resume is what a claimed job resumes from: its completed steps,
	// its children and the signal it waited for, read from the store by
	// the claim that hands it out (nil when it has none of them).
	Resume *Resume
}

// EventKind names a journal entry.
type EventKind string

// The journal's event kinds, one per transition (docs/design.md).
const (
	EventQueued          EventKind = "queued"
	EventClaimed         EventKind = "claimed"
	EventRequeued        EventKind = "requeued" // released by a node shutting down
	EventRetried         EventKind = "retried"  // failed with attempts left, queued again
	EventSucceeded       EventKind = "succeeded"
	EventFailed          EventKind = "failed"
	EventCanceled        EventKind = "canceled"
	EventCancelRequested EventKind = "cancel-requested"
	EventRescued         EventKind = "rescued" // lease expired, returned by the reaper
	EventLockBusy        EventKind = "lock-busy"
	EventManualRetry     EventKind = "manual-retry"
	EventRerunRequested  EventKind = "rerun-requested" // an operator re-ran a finished job
	EventTimedOut        EventKind = "timed-out"       // the attempt passed its deadline
	EventThrottled       EventKind = "throttled"       // its handler said the downstream is overloaded
	EventWaiting         EventKind = "waiting"         // a task waits for its dependencies
	EventReleased        EventKind = "released"        // a task's dependencies ended: queued
	EventWoken           EventKind = "woken"           // what a waiting job waited for came: queued
)

// Event is one entry of a job's journal.
type Event struct {
	// ID is the entry's position in its job's journal: 1, 2, 3… per job.
	ID      int64
	JobID   uuid.UUID
	At      time.Time
	Kind    EventKind
	Attempt int
	// Detail is free text: an error message, a reason.
	Detail string
}
