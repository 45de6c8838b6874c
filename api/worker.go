package api

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// Worker statuses as GET /api/v1/workers shows them.
const (
	WorkerActive   = "active"   // running jobs, with room for more
	WorkerIdle     = "idle"     // running nothing
	WorkerBusy     = "busy"     // every slot taken
	WorkerOffline  = "offline"  // no heartbeat for the offline period
	WorkerDisabled = "disabled" // disabled by an operator
)

// WorkerRequest is the body of POST /api/v1/workers. Queues limits the
// worker's claims to those queues (names, and prefixes written NAME.*,
// which match NAME. followed by anything; at most 64): a claim naming
// another is 403 naming queues. Empty: every queue but jobd's own, from
// which no worker claims.
type WorkerRequest struct {
	Name         string          `json:"name"`
	Capabilities []string        `json:"capabilities,omitempty"`
	Queues       []string        `json:"queues,omitempty"`
	Metadata     json.RawMessage `json:"metadata,omitempty"`
}

// WorkerCreated is the answer of POST /api/v1/workers. APIKey (scope
// worker) is shown only here.
type WorkerCreated struct {
	WorkerID string `json:"worker_id"`
	APIKey   string `json:"api_key"`
	Worker   Worker `json:"worker"`
}

// Worker is a remote worker of the registry.
type Worker struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	Status       string   `json:"status"`
	Capabilities []string `json:"capabilities"`
	// Queues are the queues it may claim from; empty: every queue but
	// jobd's own.
	Queues          []string        `json:"queues"`
	Metadata        json.RawMessage `json:"metadata"`
	LastHeartbeatAt *time.Time      `json:"last_heartbeat_at"`
	CurrentJobs     int64           `json:"current_jobs"`
	JobsDone        int64           `json:"jobs_done"`
	JobsFailed      int64           `json:"jobs_failed"`
	CreatedAt       time.Time       `json:"created_at"`
}

// WorkerList is the answer of GET /api/v1/workers.
type WorkerList struct {
	Workers []Worker `json:"workers"`
}

// Lease names a claim: the job and the token its claim issued.
type Lease struct {
	ID         uuid.UUID `json:"id"`
	LeaseToken uuid.UUID `json:"lease_token"`
}

// HeartbeatRequest is the body of POST /api/v1/worker/heartbeat: the
// worker's status (active, idle or busy) and the leases to extend.
type HeartbeatRequest struct {
	Status string  `json:"status"`
	Leases []Lease `json:"leases,omitempty"`
}

// LeaseState is one lease's answer to a heartbeat.
type LeaseState struct {
	ID              uuid.UUID `json:"id"`
	Held            bool      `json:"held"`
	CancelRequested bool      `json:"cancel_requested"`
}

// HeartbeatResponse answers a heartbeat, one entry per lease, in order.
type HeartbeatResponse struct {
	Leases []LeaseState `json:"leases"`
}

// ClaimRequest is the body of POST /api/v1/worker/claim.
type ClaimRequest struct {
	Queues []string `json:"queues"`
	// Max defaults to 1.
	Max int `json:"max,omitempty"`
	// Wait long-polls up to this long when no job is ready; default 0.
	Wait Duration `json:"wait,omitempty"`
}

// ClaimedJob is a job a worker claimed: the job with its lease. Its
// lease lasts LeaseTTL (LeaseTTLSeconds) from the claim and from each
// renewal (a heartbeat, progress, a checkpoint); HeartbeatIntervalSeconds
// is how often the server advises renewing it: a third of the lease, at
// most the server's own heartbeat interval.
type ClaimedJob struct {
	Job
	LeaseToken               uuid.UUID `json:"lease_token"`
	HeartbeatIntervalSeconds float64   `json:"heartbeat_interval_seconds"`
	// Inputs are a workflow task's dependencies' ends, by ref, read
	// from the store at the claim; absent for a job without
	// dependencies.
	Inputs map[string]Input `json:"inputs,omitempty"`
	// Steps, Children and Signal are what a durable job resumes from
	// (docs/steps-and-children.md): its completed steps (name → result),
	// its children (key → how each stands) and the signal of its last
	// signal wait; absent for a job that recorded no step, spawned no
	// child and never waited.
	Steps    map[string]json.RawMessage `json:"steps,omitempty"`
	Children map[string]Child           `json:"children,omitempty"`
	Signal   *Signal                    `json:"signal,omitempty"`
}

// ClaimResponse is the answer of a claim; Jobs is empty when none came.
type ClaimResponse struct {
	Jobs []ClaimedJob `json:"jobs"`
}

// ProgressRequest is the body of POST /api/v1/worker/jobs/{id}/progress.
// Done and Total are not negative; with a Total above zero, Done is at
// most Total (Total 0: unknown). Items is per-item detail, any JSON; the
// dashboard shows rows for an object of items by name or an array of
// items with a name, each with done and total (or percent, or progress
// from 0 to 1) and a state.
type ProgressRequest struct {
	LeaseToken uuid.UUID       `json:"lease_token"`
	Phase      string          `json:"phase,omitempty"`
	Done       int64           `json:"done"`
	Total      int64           `json:"total"`
	Items      json.RawMessage `json:"items,omitempty"`
}

// ProgressResponse answers progress; CheckpointResponse a checkpoint.
// CancelRequested says that the job's cancel was requested: the worker
// should stop it and report its outcome (a success still succeeds; a
// failure or a release ends it canceled).
type ProgressResponse struct {
	CancelRequested bool `json:"cancel_requested"`
}

// CheckpointResponse answers a checkpoint (see ProgressResponse).
type CheckpointResponse struct {
	CancelRequested bool `json:"cancel_requested"`
}

// CheckpointRequest is the body of POST /api/v1/worker/jobs/{id}/checkpoint.
type CheckpointRequest struct {
	LeaseToken uuid.UUID       `json:"lease_token"`
	Checkpoint json.RawMessage `json:"checkpoint"`
}

// CompleteRequest is the body of POST /api/v1/worker/jobs/{id}/complete.
type CompleteRequest struct {
	LeaseToken uuid.UUID       `json:"lease_token"`
	Result     json.RawMessage `json:"result,omitempty"`
}

// FailRequest is the body of POST /api/v1/worker/jobs/{id}/fail. A
// retryable failure with attempts left waits, before the next attempt,
// RetryAfter when given, else the backoff of the job's queue (the
// server's configuration), as a failure in the engine does.
//
// Throttle says instead that the downstream the job calls is overloaded:
// the job is queued again after it, its attempt not counted (whatever
// Retryable says), and no job of its queue, or of its partition_key when
// the queue's throttle_by is partition_key, starts on any node or worker
// before then. It is above zero and at most MaxThrottle.
type FailRequest struct {
	LeaseToken uuid.UUID `json:"lease_token"`
	Error      string    `json:"error"`
	Retryable  bool      `json:"retryable"`
	RetryAfter *Duration `json:"retry_after,omitempty"`
	Throttle   *Duration `json:"throttle,omitempty"`
}

// MaxThrottle bounds FailRequest.Throttle (job.MaxThrottle, which this
// package, light for remote workers, does not import).
const MaxThrottle = 24 * time.Hour

// ReleaseRequest is the body of POST /api/v1/worker/jobs/{id}/release: a
// worker gives back, unfinished, a job it claimed (it is shutting down).
// The job is queued again at once, its attempt not counted.
type ReleaseRequest struct {
	LeaseToken uuid.UUID `json:"lease_token"`
}

// FinishResponse answers complete, fail and release: the state the job
// reached. Repeat says that the outcome repeats the one applied last to
// the job with this lease token (its answer was lost, and the worker sent
// it again): nothing changed, and State is the job's current state.
type FinishResponse struct {
	State  State `json:"state"`
	Repeat bool  `json:"repeat,omitempty"`
}

// The outcomes of POST /api/v1/worker/outcomes.
const (
	OutcomeComplete = "complete"
	OutcomeFail     = "fail"
	OutcomeRelease  = "release"
)

// MaxOutcomes bounds the outcomes of one POST /api/v1/worker/outcomes.
const MaxOutcomes = 1000

// OutcomesRequest is the body of POST /api/v1/worker/outcomes: up to
// MaxOutcomes outcomes, applied together and answered each on its own.
type OutcomesRequest struct {
	Outcomes []OutcomeItem `json:"outcomes"`
}

// OutcomeItem is one outcome of OutcomesRequest: the job, its lease
// token and the outcome, OutcomeComplete (with Result), OutcomeFail (with
// the members of FailRequest) or OutcomeRelease; a member of another
// outcome is refused.
type OutcomeItem struct {
	ID         uuid.UUID       `json:"id"`
	LeaseToken uuid.UUID       `json:"lease_token"`
	Outcome    string          `json:"outcome"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      string          `json:"error,omitempty"`
	Retryable  bool            `json:"retryable,omitempty"`
	RetryAfter *Duration       `json:"retry_after,omitempty"`
	Throttle   *Duration       `json:"throttle,omitempty"`
}

// OutcomesResponse answers POST /api/v1/worker/outcomes: one answer per
// outcome, in the request's order.
type OutcomesResponse struct {
	Outcomes []OutcomeAnswer `json:"outcomes"`
}

// OutcomeAnswer is one outcome's answer: ID is its job's (absent when the
// item's id could not be read); Status is the HTTP status the
// outcome would have had alone (200 with State and Repeat as
// FinishResponse has them; else Problem, the problem document it would
// have had, whose Field names the item's member at fault).
type OutcomeAnswer struct {
	ID      uuid.UUID `json:"id,omitzero"`
	Status  int       `json:"status"`
	State   State     `json:"state,omitempty"`
	Repeat  bool      `json:"repeat,omitempty"`
	Problem *Problem  `json:"problem,omitempty"`
}
