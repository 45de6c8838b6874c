// Package api holds the JSON wire types of jobd's HTTP API v1, and the one
// table of its problem kinds (ProblemKinds: type URI, status, title,
// class). The server (packages httpapi and gateway) answers by them and
// the Go client (package client) reads them, so a remote caller needs
// nothing of the server to speak the protocol; api imports nothing of the
// server. Times are RFC 3339. A duration is read as a Go duration string
// ("90s", "5m") or a number of seconds (90, 0.5), and written as a Go
// duration string beside a member of the same name with "_seconds"
// appended that holds it in seconds (see Duration).
package api

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// State is where a job is in its lifecycle.
type State string

// The six states of a job. Succeeded, failed and canceled are final. A
// waiting job (a workflow task whose dependencies are not final) is
// never claimed.
const (
	StateWaiting   State = "waiting"
	StateQueued    State = "queued"
	StateRunning   State = "running"
	StateSucceeded State = "succeeded"
	StateFailed    State = "failed"
	StateCanceled  State = "canceled"
)

// Final reports whether no transition leaves s except an operator's retry.
func (s State) Final() bool {
	return s == StateSucceeded || s == StateFailed || s == StateCanceled
}

// Unique modes of SubmitRequest.Unique.
const (
	// UniqueActive asks for active-duplicate dedupe: a queued or running
	// job with the same (queue, kind, args) is returned instead of a new one.
	UniqueActive = "active"
)

// Progress is what a running job last reported about itself.
type Progress struct {
	Phase string `json:"phase"`
	Done  int64  `json:"done"`
	Total int64  `json:"total"`
	// Items is per-item detail (for example the state of each file of a
	// batch); null when the job reports none.
	Items json.RawMessage `json:"items"`
}

// Job is a job as the API shows it. The lease token, a worker's secret, is
// never part of it.
type Job struct {
	ID          uuid.UUID       `json:"id"`
	Queue       string          `json:"queue"`
	Kind        string          `json:"kind"`
	Args        json.RawMessage `json:"args"`
	State       State           `json:"state"`
	Priority    int             `json:"priority"`
	Attempt     int             `json:"attempt"`
	MaxAttempts int             `json:"max_attempts"`
	LeaseTTL    Duration        `json:"lease_ttl"`
	// LeaseTTLSeconds is LeaseTTL in seconds.
	LeaseTTLSeconds float64   `json:"lease_ttl_seconds"`
	RunAt           time.Time `json:"run_at"`

	LockKey        string `json:"lock_key"`
	PartitionKey   string `json:"partition_key"`
	IdempotencyKey string `json:"idempotency_key"`
	// Requires and Prefers are the job's capability rules; [] for none.
	Requires []string `json:"requires"`
	Prefers  []string `json:"prefers"`

	Progress   Progress        `json:"progress"`
	Checkpoint json.RawMessage `json:"checkpoint"`
	Result     json.RawMessage `json:"result"`
	// Error is the error of the job's last failed attempt while the job
	// has not succeeded (queued again after a failure, failed, or
	// canceled after one); "" once it succeeds and when no attempt
	// failed. LastError keeps it whatever the state: a job that
	// succeeded after a failed attempt shows that attempt's error there.
	Error           string `json:"error"`
	LastError       string `json:"last_error"`
	CancelRequested bool   `json:"cancel_requested"`

	// LeaseOwner names the node or worker running the job; empty unless
	// running.
	LeaseOwner     string     `json:"lease_owner"`
	LeaseExpiresAt *time.Time `json:"lease_expires_at"`
	HeartbeatAt    *time.Time `json:"heartbeat_at"`

	CreatedAt  time.Time  `json:"created_at"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	UpdatedAt  time.Time  `json:"updated_at"`

	// TraceParent is the W3C traceparent the job was submitted with (its
	// submitter's trace, which each execution joins); absent for none. A
	// remote worker can continue that trace with it.
	TraceParent string `json:"trace_parent,omitempty"`

	// Schedule names the schedule that made the job and ScheduledFor its
	// tick (the trigger's time for a trigger); "" and null otherwise.
	Schedule     string     `json:"schedule"`
	ScheduledFor *time.Time `json:"scheduled_for"`
	// Timeout bounds each attempt's run time at the server (null: none
	// of its own; its queue's default may apply). Deadline is the
	// running attempt's end, its claim + the timeout: the attempt is
	// over then, whatever its holder does (its writes answer 409
	// lease-lost), and the job is retried or failed, "timed out".
	Timeout *Duration `json:"timeout"`
	// TimeoutSeconds is Timeout in seconds; null for none.
	TimeoutSeconds *float64   `json:"timeout_seconds"`
	Deadline       *time.Time `json:"deadline"`
	// Rerun counts the operator's re-runs (POST /api/v1/jobs/{id}/rerun).
	// PreviousState and PreviousResult are the state and result the job
	// had when last re-run: until the claim of the new attempt, Result is
	// still that result, readable; the claim clears it. A handler of a
	// re-run receives them in its claimed job.
	Rerun          int             `json:"rerun"`
	PreviousState  State           `json:"previous_state,omitempty"`
	PreviousResult json.RawMessage `json:"previous_result"`
	// CallbackURL is where jobd POSTs the job each time it becomes final
	// (a webhook of type job.finished); absent for none.
	CallbackURL string `json:"callback_url,omitempty"`
	// WorkflowID is the workflow the job is a task of, and Ref its name
	// there; null and "" for a job outside workflows.
	WorkflowID *uuid.UUID `json:"workflow_id"`
	Ref        string     `json:"ref"`
	// ParentID and ChildKey name the job that spawned this one and the
	// key it gave it; absent for a job no job spawned.
	ParentID *uuid.UUID `json:"parent_id,omitempty"`
	ChildKey string     `json:"child_key,omitempty"`
	// Steps are the steps the job recorded, with their timings, in the
	// order they were recorded: shown by GET /api/v1/jobs/{id}; absent
	// elsewhere, and for a job without steps.
	Steps []Step `json:"steps,omitempty"`
}

// JobReplay is the answer (200) of POST /api/v1/jobs that matched an
// existing job (its idempotency key, or an active duplicate) to a
// credential without the read scope: the job's id and state, and nothing
// it carries (args, result, error, progress, checkpoint), which may be
// another caller's. A credential that may read jobs gets the whole Job.
type JobReplay struct {
	ID    uuid.UUID `json:"id"`
	State State     `json:"state"`
}

// SubmitRequest is the body of POST /api/v1/jobs. Only Kind is required.
type SubmitRequest struct {
	// Queue defaults to "default".
	Queue string `json:"queue,omitempty"`
	Kind  string `json:"kind"`
	// Args is a JSON object; default {}.
	Args json.RawMessage `json:"args,omitempty"`
	// Priority: lower runs first; default 100.
	Priority *int `json:"priority,omitempty"`
	// RunAt delays the job; default now.
	RunAt *time.Time `json:"run_at,omitempty"`
	// MaxAttempts defaults to 5.
	MaxAttempts int `json:"max_attempts,omitempty"`
	// LeaseTTL is how long a claim lasts without a heartbeat; default 60s.
	LeaseTTL       Duration `json:"lease_ttl,omitempty"`
	LockKey        string   `json:"lock_key,omitempty"`
	PartitionKey   string   `json:"partition_key,omitempty"`
	IdempotencyKey string   `json:"idempotency_key,omitempty"`
	// Unique is "" or UniqueActive.
	Unique string `json:"unique,omitempty"`
	// Requires: only workers with all of these capabilities may claim the
	// job. Prefers: for the server's prefer window after the job became
	// available, a worker without all of these does not take it while an
	// idle online worker with them exists. At most 32 short names each.
	Requires []string `json:"requires,omitempty"`
	Prefers  []string `json:"prefers,omitempty"`
	// Timeout bounds each attempt's run time at the server (at least
	// 1s); default none, or the queue's default timeout.
	Timeout Duration `json:"timeout,omitempty"`
	// CallbackURL, an absolute http:// or https:// URL of at most 2 KiB,
	// receives the job each time it becomes final (a webhook of type
	// job.finished, signed with the server's callback secret). The server
	// refuses to call loopback, link-local and private addresses unless
	// configured otherwise.
	CallbackURL string `json:"callback_url,omitempty"`
}

// MaxBatchJobs bounds the jobs of one POST /api/v1/jobs/batch.
const MaxBatchJobs = 1000

// SubmitBatchRequest is the body of POST /api/v1/jobs/batch: 1 to
// MaxBatchJobs jobs, inserted in one transaction, each as POST
// /api/v1/jobs would insert it alone.
type SubmitBatchRequest struct {
	Jobs []SubmitRequest `json:"jobs"`
}

// SubmitBatchResponse answers POST /api/v1/jobs/batch: one answer per
// job, in the request's order.
type SubmitBatchResponse struct {
	Jobs []SubmitBatchItem `json:"jobs"`
}

// SubmitBatchItem is one job's answer: Status 201 and the new job's id
// and state; 200 and the existing job's when its idempotency key (or
// the active duplicate) matched one; or, for a key that names a job of
// a queue the caller cannot see, 409 and Problem, and no job.
type SubmitBatchItem struct {
	Status  int       `json:"status"`
	ID      uuid.UUID `json:"id,omitzero"`
	State   State     `json:"state,omitempty"`
	Problem *Problem  `json:"problem,omitempty"`
}

// SubmitBatchProblem is the problem document of a batch refused whole:
// when one job is refused (a 400, 403 or 422 it would get alone), none is
// inserted. The problem is the first refused job's, its Field naming the
// job's member as "jobs[3].queue"; Items lists every refused job.
type SubmitBatchProblem struct {
	Problem
	Items []SubmitBatchRefusal `json:"items"`
}

// SubmitBatchRefusal is one refused job of a batch: its position in the
// request and its problem (whose Field names its member, "queue").
type SubmitBatchRefusal struct {
	Index   int     `json:"index"`
	Problem Problem `json:"problem"`
}

// JobList is one page of GET /api/v1/jobs.
type JobList struct {
	Jobs []Job `json:"jobs"`
	// NextCursor continues the listing; empty on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
	// ResumeCursor, in feed mode (updated_since), marks the position after
	// this page even on the last one: pass it back later as the cursor,
	// with the same filters, to receive only the changes made since.
	ResumeCursor string `json:"resume_cursor,omitempty"`
	// Total is the number of jobs matching the filter, ignoring paging
	// (also sent as the X-Total-Count header).
	Total int64 `json:"total"`
}

// Event is one entry of a job's journal.
type Event struct {
	// ID is the entry's position in its job's journal: 1, 2, 3… per
	// job, oldest first.
	ID      int64     `json:"id"`
	JobID   uuid.UUID `json:"job_id"`
	At      time.Time `json:"at"`
	Kind    string    `json:"kind"`
	Attempt int       `json:"attempt"`
	Detail  string    `json:"detail,omitempty"`
}

// EventList is the answer of GET /api/v1/jobs/{id}/events, oldest first.
type EventList struct {
	Events []Event `json:"events"`
}

// KeyRequest is the body of POST /api/v1/keys. Queues limits the key to
// those queues (names, and prefixes written NAME.*; at most 64): it then
// submits only to them and reads and cancels only their jobs, and every
// route that is not about a caller's queue answers it 403. Empty: every
// queue. Only keys of scopes submit, read and cancel can be limited.
type KeyRequest struct {
	Name   string   `json:"name"`
	Scopes []string `json:"scopes"`
	Queues []string `json:"queues,omitempty"`
}

// Key describes an API key. Key, the secret itself, is only present in the
// answer that created it: it is stored as a hash and never shown again.
type Key struct {
	ID     string   `json:"id"`
	Key    string   `json:"key,omitempty"`
	Name   string   `json:"name"`
	Prefix string   `json:"prefix"`
	Scopes []string `json:"scopes"`
	// Queues are the queues the key is limited to; empty: every queue.
	Queues    []string  `json:"queues"`
	CreatedAt time.Time `json:"created_at"`
}

// KeyList is the answer of GET /api/v1/keys.
type KeyList struct {
	Keys []Key `json:"keys"`
}

// The scopes an API key can hold. Admin implies every other one.
const (
	ScopeSubmit = "submit" // POST /api/v1/jobs and /api/v1/jobs/trigger
	ScopeRead   = "read"   // every GET
	ScopeAdmin  = "admin"  // cancel, retry, rerun, queue pause/resume, schedules' changes, keys, workers
	// ScopeCancel cancels jobs (POST /api/v1/jobs/{id}/cancel): a
	// submitter's key can cancel what it submitted without admin. A key
	// limited to queues cancels only their jobs.
	ScopeCancel = "cancel"
	// ScopeWorker is a remote worker's key's only scope (/api/v1/worker/).
	ScopeWorker = "worker"
	// ScopeMetrics is a scraper's: GET /metrics (admin grants it too).
	ScopeMetrics = "metrics"
)

// Health is the answer of GET /health.
type Health struct {
	Status string `json:"status"`
}

// Status is the answer of GET /status.
type Status struct {
	Status    string    `json:"status"`
	Version   string    `json:"version"`
	StartedAt time.Time `json:"started_at"`
	Uptime    Duration  `json:"uptime"`
	// UptimeSeconds is Uptime in seconds.
	UptimeSeconds float64 `json:"uptime_seconds"`
	// Jobs counts jobs by state over every queue.
	Jobs map[State]int64 `json:"jobs"`
}

// Problem is an RFC 9457 problem document, the body of every error
// answer (Content-Type application/problem+json).
type Problem struct {
	// Type is a stable URI naming the kind of problem.
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Field names the request field (body member, query parameter or path
	// segment) at fault, when there is one.
	Field string `json:"field,omitempty"`
}
