package api

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
)

// WorkflowState is where a workflow is: running until every task is
// final, then succeeded, failed (a task failed) or canceled (a task was
// canceled, none failed).
type WorkflowState string

// The states of a workflow. All but running are final; a retry makes a
// final workflow running again.
const (
	WorkflowRunning   WorkflowState = "running"
	WorkflowSucceeded WorkflowState = "succeeded"
	WorkflowFailed    WorkflowState = "failed"
	WorkflowCanceled  WorkflowState = "canceled"
)

// Final reports whether s is not running.
func (s WorkflowState) Final() bool {
	return s == WorkflowSucceeded || s == WorkflowFailed || s == WorkflowCanceled
}

// The values of WorkflowTaskRequest.RunOn.
const (
	// RunOnSuccess, the default: the task runs once every dependency
	// succeeded, and is canceled when one fails or is canceled.
	RunOnSuccess = "success"
	// RunOnAny: the task runs once every dependency is final, however it
	// ended (a cleanup or notify step).
	RunOnAny = "any"
)

// EventWorkflowFinished is the webhook event of a workflow's end: its
// last task became final (WorkflowFinishedData).
const EventWorkflowFinished = "workflow.finished"

// WorkflowRequest is the body of POST /api/v1/workflows: a name, an
// optional idempotency key and 1 to the server's --workflow-max-tasks
// tasks, inserted in one transaction.
type WorkflowRequest struct {
	Name           string                `json:"name"`
	IdempotencyKey string                `json:"idempotency_key,omitempty"`
	Tasks          []WorkflowTaskRequest `json:"tasks"`
}

// WorkflowTaskRequest is one task of a WorkflowRequest: a job submission
// (every member of SubmitRequest but idempotency_key and unique, which
// the workflow's key covers) with its ref, unique in the workflow, the
// refs it depends on and when it runs (RunOnSuccess, the default, or
// RunOnAny).
type WorkflowTaskRequest struct {
	SubmitRequest
	Ref       string   `json:"ref"`
	DependsOn []string `json:"depends_on,omitempty"`
	RunOn     string   `json:"run_on,omitempty"`
}

// Workflow is a workflow as the API shows it: its row, the counts of its
// tasks by state, and (GET /api/v1/workflows/{id}, POST
// /api/v1/workflows) its tasks, edges and journal.
type Workflow struct {
	ID             uuid.UUID     `json:"id"`
	Name           string        `json:"name"`
	State          WorkflowState `json:"state"`
	IdempotencyKey string        `json:"idempotency_key"`
	// TaskCount counts its tasks, and Succeeded, Failed and Canceled
	// those final in each state. Counts counts them by every job state;
	// only in a workflow's detail (GET /api/v1/workflows/{id}).
	TaskCount  int             `json:"task_count"`
	Succeeded  int             `json:"succeeded"`
	Failed     int             `json:"failed"`
	Canceled   int             `json:"canceled"`
	Counts     map[State]int   `json:"counts,omitempty"`
	CreatedAt  time.Time       `json:"created_at"`
	UpdatedAt  time.Time       `json:"updated_at"`
	FinishedAt *time.Time      `json:"finished_at"`
	Tasks      []WorkflowTask  `json:"tasks,omitempty"`
	Edges      []WorkflowEdge  `json:"edges,omitempty"`
	Events     []WorkflowEvent `json:"events,omitempty"`
}

// WorkflowTask is one task of a workflow's detail: the job's id, its ref,
// what it runs, where it is, what it depends on (refs) and its timings.
// GET /api/v1/jobs/{id} shows the whole job.
type WorkflowTask struct {
	ID        uuid.UUID `json:"id"`
	Ref       string    `json:"ref"`
	Queue     string    `json:"queue"`
	Kind      string    `json:"kind"`
	State     State     `json:"state"`
	RunOn     string    `json:"run_on"`
	DependsOn []string  `json:"depends_on"`
	// Pending counts its dependencies not final yet, while it waits.
	Pending int `json:"pending"`
	Attempt int `json:"attempt"`
	// Error is its last error while it has not succeeded; a task the
	// dependency rule canceled names the dependency there, and CanceledBy
	// is that dependency's ref.
	Error      string     `json:"error"`
	CanceledBy string     `json:"canceled_by,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
}

// WorkflowEdge is one dependency: the task Task depends on the task
// DependsOn (refs).
type WorkflowEdge struct {
	Task      string `json:"task"`
	DependsOn string `json:"depends_on"`
}

// WorkflowEvent is one entry of a workflow's journal: submitted,
// cancel-requested, retried, succeeded, failed, canceled.
type WorkflowEvent struct {
	ID     int64     `json:"id"`
	At     time.Time `json:"at"`
	Kind   string    `json:"kind"`
	Detail string    `json:"detail,omitempty"`
}

// WorkflowReplay is the answer (200) of POST /api/v1/workflows that
// matched a workflow by its idempotency key, to a credential without
// the read scope: its id and state.
type WorkflowReplay struct {
	ID    uuid.UUID     `json:"id"`
	State WorkflowState `json:"state"`
}

// WorkflowList is one page of GET /api/v1/workflows, newest first.
type WorkflowList struct {
	Workflows []Workflow `json:"workflows"`
	// NextCursor continues the listing; empty on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
	// Total counts the workflows matching the filters, ignoring paging
	// (also the X-Total-Count header); -1 for a key limited to queues,
	// whose listing is not counted.
	Total int64 `json:"total"`
}

// Input is how one dependency of a claimed task ended (ClaimedJob.Inputs,
// by the dependency's ref): its state, its result (null for none) and
// its last error ("" for a success).
type Input struct {
	State  State           `json:"state"`
	Result json.RawMessage `json:"result"`
	Error  string          `json:"error"`
}

// WorkflowFinishedData is the data of a workflow.finished delivery.
type WorkflowFinishedData struct {
	Workflow WorkflowFinished `json:"workflow"`
}

// WorkflowFinished names the workflow that ended, and how.
type WorkflowFinished struct {
	ID         uuid.UUID     `json:"id"`
	Name       string        `json:"name"`
	State      WorkflowState `json:"state"`
	FinishedAt time.Time     `json:"finished_at"`
}
