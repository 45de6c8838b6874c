package api

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Durable execution's wire types (docs/steps-and-children.md).

// StepRequest is the body of POST /api/v1/worker/jobs/{id}/steps: a step
// the worker completed, recorded once per (job, name).
type StepRequest struct {
	LeaseToken uuid.UUID       `json:"lease_token"`
	Name       string          `json:"name"`
	Result     json.RawMessage `json:"result"`
	// StartedAt is when the step started; absent: when it is recorded.
	StartedAt *time.Time `json:"started_at,omitempty"`
}

// Step is a step a job recorded, with its timings.
type Step struct {
	Name       string          `json:"name"`
	Result     json.RawMessage `json:"result"`
	Attempt    int             `json:"attempt"`
	StartedAt  time.Time       `json:"started_at"`
	FinishedAt time.Time       `json:"finished_at"`
	// DurationSeconds is FinishedAt less StartedAt, in seconds.
	DurationSeconds float64 `json:"duration_seconds"`
}

// StepResponse answers a step: the step as the job keeps it; Recorded
// false when a step of that name was recorded before (which Step is);
// CancelRequested as a checkpoint's.
type StepResponse struct {
	Step            Step `json:"step"`
	Recorded        bool `json:"recorded"`
	CancelRequested bool `json:"cancel_requested"`
}

// ChildrenRequest is the body of POST /api/v1/worker/jobs/{id}/children:
// each child is a job submission (SubmitRequest's members) with a "key",
// unique per parent.
type ChildrenRequest struct {
	LeaseToken uuid.UUID         `json:"lease_token"`
	Children   []json.RawMessage `json:"children"`
}

// SpawnedChild is one child of a spawn's answer, in the order of the
// request: Created false when the parent had a child of that key
// already, which it is.
type SpawnedChild struct {
	Key     string    `json:"key"`
	ID      uuid.UUID `json:"id"`
	State   State     `json:"state"`
	Created bool      `json:"created"`
}

// ChildrenResponse answers a spawn.
type ChildrenResponse struct {
	Children []SpawnedChild `json:"children"`
}

// WaitRequest is the body of POST /api/v1/worker/jobs/{id}/wait, which
// ends the attempt waiting: "for": "children" (every child final), "for":
// "signal" with "signal" (and "timeout", in seconds), or "until" (RFC
// 3339) alone.
type WaitRequest struct {
	LeaseToken uuid.UUID `json:"lease_token"`
	For        string    `json:"for,omitempty"`
	Signal     string    `json:"signal,omitempty"`
	Timeout    *Duration `json:"timeout,omitempty"`
	Until      *string   `json:"until,omitempty"`
}

// WaitResponse answers a wait: the job's state (waiting; queued for a
// timed wait, or when what it waits for came already) and its run_at.
type WaitResponse struct {
	State State     `json:"state"`
	RunAt time.Time `json:"run_at"`
}

// SignalRequest is the body of POST /api/v1/jobs/{id}/signal.
type SignalRequest struct {
	Name    string          `json:"name"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// SignalResponse answers a signal: Delivered when it woke the job, false
// when it is kept until the job waits for it; Job as the signal left it.
type SignalResponse struct {
	Delivered bool `json:"delivered"`
	Job       Job  `json:"job"`
}

// Child is how a child stands, as its resumed parent's claim shows it.
type Child struct {
	ID     uuid.UUID       `json:"id"`
	State  State           `json:"state"`
	Result json.RawMessage `json:"result"`
	Error  string          `json:"error"`
}

// Signal is the signal of a resumed job's last signal wait: its name and
// payload, or TimedOut when the wait's timeout passed first.
type Signal struct {
	Name     string          `json:"name"`
	Payload  json.RawMessage `json:"payload"`
	TimedOut bool            `json:"timed_out"`
}
