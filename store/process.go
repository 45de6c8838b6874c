package store

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
)

// ProcessStatus is where a durable process is: running, or in error until
// a repair task succeeds.
type ProcessStatus string

// The statuses of a process.
const (
	ProcessRunning ProcessStatus = "running"
	ProcessError   ProcessStatus = "error"
)

// Process is one durable process instance: (Namespace, ID), its status and
// state, and a page of its history.
type Process struct {
	Namespace string
	ID        string
	Status    ProcessStatus
	// Detail says why the process is in error; "" when running.
	Detail   string
	AuxState json.RawMessage
	Metadata json.RawMessage
	// TimerAt and TimerJob are the pending timer (a job of the process's
	// lock_key with run_at TimerAt); nil and zero when there is none.
	TimerAt  *time.Time
	TimerJob uuid.UUID
	// LastEventID is the event_id of the newest event (0: none).
	LastEventID int64
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// History is the page of events ProcessGet was asked for, oldest first.
	History []ProcessEvent
}

// ProcessEvent is one event of a process's history. EventID counts 1, 2,
// 3... per process.
type ProcessEvent struct {
	EventID int64
	At      time.Time
	Payload json.RawMessage
}

// HistoryPage selects the events ProcessGet returns: those with event_id >
// After, oldest first, at most Limit; with After < 0, the last Limit.
// Limit 0 returns none.
type HistoryPage struct {
	After int64
	Limit int
}

// ProcessListParams filters ProcessList.
type ProcessListParams struct {
	Namespace string
	// Status filters when not "".
	Status ProcessStatus
	// After continues a page: the last process id of the previous one.
	After string
	// Limit caps the rows returned; 0 returns only the count.
	Limit int
}

// ProcessTaskResult is what a process task changes, applied by
// ProcessTaskFinish in one transaction fenced by the task's lease.
type ProcessTaskResult struct {
	// Lease is the task job's claim.
	Lease     Lease
	Namespace string
	ID        string
	// Outcome is stored as the task job's checkpoint: it records that the
	// task's changes are saved, so that a later attempt of the same task
	// (its node died before the job's own outcome was written) returns it
	// instead of calling the processor again.
	Outcome json.RawMessage
	// Create makes a new process (an init task); job.ErrDuplicate when it
	// exists. Otherwise the process must exist (job.ErrNotFound).
	Create bool
	// Remove deletes the process, its history and its pending timer; the
	// fields below are then ignored.
	Remove bool
	Status ProcessStatus
	Detail string
	// AuxState and Metadata replace the process's when not nil.
	AuxState json.RawMessage
	Metadata json.RawMessage
	// Events are appended to the history with the next event_ids.
	Events []json.RawMessage
	// SetTimer, when not nil, is the job of a new timer: it replaces the
	// pending one, which is canceled. UnsetTimer cancels the pending one.
	// A status of error cancels it too (and ignores SetTimer).
	SetTimer   *job.InsertParams
	UnsetTimer bool
}
