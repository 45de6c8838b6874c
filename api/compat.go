package api

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// TriggerRequest is the body of POST /api/v1/jobs/trigger, the dataloader's
// submission contract. Task is another name for Kind and AvailableAt for
// RunAt; give one of each pair.
type TriggerRequest struct {
	Queue          string          `json:"queue,omitempty"`
	Task           string          `json:"task,omitempty"`
	Kind           string          `json:"kind,omitempty"`
	Args           json.RawMessage `json:"args,omitempty"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	LockKey        string          `json:"lock_key,omitempty"`
	PartitionKey   string          `json:"partition_key,omitempty"`
	Priority       *int            `json:"priority,omitempty"`
	AvailableAt    *time.Time      `json:"available_at,omitempty"`
	RunAt          *time.Time      `json:"run_at,omitempty"`
	// CallbackURL: see SubmitRequest.CallbackURL.
	CallbackURL string `json:"callback_url,omitempty"`
}

// TriggerResponse answers a trigger: the job's id and state.
type TriggerResponse struct {
	JobID  uuid.UUID `json:"job_id"`
	Status State     `json:"status"`
}

// JobStatus is the answer of GET /api/v1/jobs/{id}/status, the dataloader's
// status contract.
type JobStatus struct {
	JobID       uuid.UUID  `json:"job_id"`
	Status      State      `json:"status"`
	Attempt     int        `json:"attempt"`
	StartedAt   *time.Time `json:"started_at"`
	FinishedAt  *time.Time `json:"finished_at"`
	HeartbeatAt *time.Time `json:"heartbeat_at"`
	Error       string     `json:"error,omitempty"`
	Progress    Progress   `json:"progress"`
}
