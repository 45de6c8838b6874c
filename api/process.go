package api

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// ProcessStatus is where a durable process is: running, or in error
// until a repair succeeds.
type ProcessStatus string

// The statuses of a process.
const (
	ProcessRunning ProcessStatus = "running"
	ProcessError   ProcessStatus = "error"
)

// ProcessTaskRequest is the body of init, call and repair
// (POST /api/v1/processes/{ns}/{id}[/call|/repair]); the body may also be
// empty. Args is handed to the processor as is.
type ProcessTaskRequest struct {
	Args json.RawMessage `json:"args,omitempty"`
}

// Process is a durable process as the API shows it.
type Process struct {
	Namespace string        `json:"namespace"`
	ID        string        `json:"id"`
	Status    ProcessStatus `json:"status"`
	// Detail says why the process is in error.
	Detail   string          `json:"detail,omitempty"`
	AuxState json.RawMessage `json:"aux_state"`
	Metadata json.RawMessage `json:"metadata"`
	// Timer is the pending timer; null when there is none.
	Timer *ProcessTimer `json:"timer"`
	// LastEventID is the event_id of the newest event (0: none).
	LastEventID int64     `json:"last_event_id"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	// History is a page of events, oldest first: in GET's answer only.
	History []ProcessEvent `json:"history,omitempty"`
}

// ProcessTimer is a process's pending timer: the task job TaskID runs at
// At.
type ProcessTimer struct {
	At     time.Time `json:"at"`
	TaskID uuid.UUID `json:"task_id"`
}

// ProcessEvent is one event of a process's history, as its processor
// wrote it.
type ProcessEvent struct {
	EventID   int64           `json:"event_id"`
	Timestamp time.Time       `json:"timestamp"`
	Payload   json.RawMessage `json:"payload"`
}

// ProcessTaskAnswer is the answer of a finished init, call or repair.
type ProcessTaskAnswer struct {
	// TaskID is the task's job.
	TaskID uuid.UUID `json:"task_id"`
	// Response is the processor's response; null when it gave none.
	Response json.RawMessage `json:"response"`
	// Process is the process after the task (later tasks may already have
	// run); null when the task removed it.
	Process *Process `json:"process"`
}

// ProcessTaskTimeout is the 504 problem (type ProblemTaskTimeout) of a
// task still queued or running when the call's ?timeout= passed. The task
// is not lost: its job, TaskID, has its outcome once it is final.
type ProcessTaskTimeout struct {
	Problem
	TaskID uuid.UUID `json:"task_id"`
	State  State     `json:"state"`
}

// ProcessList is one page of GET /api/v1/processes/{ns}, ordered by id,
// without history.
type ProcessList struct {
	Processes []Process `json:"processes"`
	// Next is the after= of the next page; "" on the last one.
	Next string `json:"next,omitempty"`
	// Total is the number of processes matching the filter, ignoring
	// paging (also sent as the X-Total-Count header).
	Total int64 `json:"total"`
}
