package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
)

// WorkflowStore holds the workflows: jobs that depend on jobs (see
// package job, workflow.go, for the rules, and docs/workflows.md).
//
// A workflow's tasks are jobs: every JobStore operation applies to them,
// with these additions. A task with dependencies is inserted waiting
// (never claimed, no lease). In the transaction of every final state of
// a task (JobFinish, JobRescue, JobTimeOut, JobCancel, WorkflowCancel),
// its dependents' pending counts go down by one, and a dependent whose
// count reaches 0 becomes queued (due at once, or at its own later
// run_at) and wakes its queue once the transaction commits; a dependent
// that runs on success (job.RunOnSuccess) of a dependency that ended
// failed or canceled is canceled instead, its last error naming the
// dependency, and so on transitively (the dependency rule). However many
// dependencies of one task end at once, on however many nodes, the task
// is released exactly once: each transaction locks the dependents it
// changes, in id order, after the tasks it ends and before their
// workflows. The same transaction keeps the workflow's counters of final
// tasks and, when its last task becomes final, ends it
// (job.WorkflowStateOf) and records a WebhookWorkflowFinished event in
// the outbox. Jobs outside workflows pay nothing: each of those steps is
// skipped by a test of the row's workflow_id.
//
// Task claims (JobClaim) carry their dependencies' ends, by ref
// (job.Job.Inputs), read from the store in the claim's call. JobRetry of
// a failed or canceled task retries it (waiting again when some of its
// dependencies are not final; job.ErrWrongState when one that it needs
// failed: retry that one, or the workflow) and restores the dependents
// the dependency rule canceled because of it. JobRerun and JobTake refuse
// tasks (job.ErrWrongState): their dependents consumed their results.
// JobPrune deletes tasks only with their workflow (a finished workflow
// whose finished_at passed, with all its tasks and edges); JobPruneQueue
// and QueuePurge leave tasks alone.
type WorkflowStore interface {
	// WorkflowSubmit inserts a workflow and all its tasks in one
	// transaction: the tasks without dependencies queued, the others
	// waiting. The params are normalised and validated first
	// (job.WorkflowParams.Normalize, with MaxTasks): a bad one fails the
	// call with a *job.ValidationError naming the task's field, and
	// nothing is written. A submission whose idempotency key names a
	// retained workflow returns that workflow (Created false) when the
	// request is the same (fingerprint), and fails with
	// job.ErrIdempotencyMismatch otherwise. The task ids are UUIDv7 in
	// an order where each task comes after its dependencies.
	WorkflowSubmit(ctx context.Context, params WorkflowSubmitParams) (*WorkflowSubmitResult, error)
	// WorkflowGet returns a workflow with its tasks, its edges, the
	// counts of its tasks by state and its journal, or job.ErrNotFound.
	WorkflowGet(ctx context.Context, id uuid.UUID) (*WorkflowDetail, error)
	// WorkflowList returns workflows matching the filters, newest first
	// (id descending), and the total count of matches (ignoring Limit and
	// the cursor) unless NoTotal.
	WorkflowList(ctx context.Context, params WorkflowListParams) (*WorkflowListResult, error)
	// WorkflowCancel cancels every task of a running workflow that is not
	// final, in one transaction: waiting and queued ones at once (journal
	// "canceled", detail "workflow canceled"), running ones cooperatively
	// (a cancel request, as JobCancel, their holders notified once it
	// commits). The workflow ends then if no task runs, else when the
	// last one ends. Its journal records "cancel-requested". A cancel of
	// a workflow whose every running task was asked to stop already
	// writes nothing. job.ErrWrongState when the workflow is final,
	// job.ErrNotFound when there is none.
	WorkflowCancel(ctx context.Context, id uuid.UUID) (*job.Workflow, error)
	// WorkflowRetry retries every failed or canceled task of a workflow,
	// in one transaction, as JobRetry does one (queued again, or waiting
	// for its dependencies not final), restoring the tasks the
	// dependency rule canceled; succeeded tasks stay as they are. The
	// workflow runs again (journal "retried"). job.ErrWrongState when no
	// task is failed or canceled, job.ErrNotFound when there is none.
	WorkflowRetry(ctx context.Context, id uuid.UUID) (*job.Workflow, error)
	// WorkflowDelete deletes a finished workflow with all its tasks (and
	// their journals) and edges, in one transaction, and returns how many
	// tasks it deleted. job.ErrWrongState when the workflow is running
	// (cancel it first), job.ErrNotFound when there is none.
	WorkflowDelete(ctx context.Context, id uuid.UUID) (int, error)
}

// WorkflowSubmitParams says what WorkflowSubmit inserts.
type WorkflowSubmitParams struct {
	job.WorkflowParams
	// MaxTasks bounds the workflow's tasks; 0 is
	// job.DefaultWorkflowMaxTasks.
	MaxTasks int
}

// WorkflowSubmitResult is what WorkflowSubmit made, or found.
type WorkflowSubmitResult struct {
	Workflow *job.Workflow
	// Tasks are its tasks, in the order of the params' tasks.
	Tasks []*job.Job
	// Created is false when an idempotency key matched a retained
	// workflow of the same request, which Workflow then is (Tasks are
	// its tasks, by id).
	Created bool
}

// Edge is one dependency of a workflow: the task Task depends on the
// task DependsOn.
type Edge struct {
	Task, DependsOn uuid.UUID
}

// WorkflowDetail is a workflow with its tasks, as WorkflowGet reads it.
type WorkflowDetail struct {
	job.Workflow
	// Tasks are its tasks, by id (each after its dependencies).
	Tasks []*job.Job
	// Edges are its dependencies, by task then dependency.
	Edges []Edge
	// Counts are its tasks by state, every job.State present.
	Counts map[job.State]int
	// Events are its journal, oldest first (job.WorkflowJournal).
	Events []job.WorkflowEvent
}

// WorkflowListParams filters WorkflowList. Zero fields do not filter.
type WorkflowListParams struct {
	Name   string
	States []job.WorkflowState
	// After continues a previous page: its last workflow's id.
	After *uuid.UUID
	// Limit caps the workflows returned; 0 returns only the count.
	Limit int
	// NoTotal skips the count of the matches: Total is then -1.
	NoTotal bool
}

// WorkflowListResult is one page of workflows, newest first.
type WorkflowListResult struct {
	Workflows []*job.Workflow
	// Total is -1 when WorkflowListParams.NoTotal skipped the count.
	Total int64
}

// CheckWorkflowList refuses list params no store can apply: an unknown
// state, a negative limit.
func CheckWorkflowList(p WorkflowListParams) error {
	for _, s := range p.States {
		if !s.Valid() {
			return job.Invalid("state", "unknown workflow state %q", s)
		}
	}
	if p.Limit < 0 {
		return job.Invalid("limit", "must be >= 0, got %d", p.Limit)
	}
	if p.Name != "" {
		return job.CheckName("name", p.Name)
	}
	return nil
}

// CountTasks counts tasks by state, every job.State present.
func CountTasks(tasks []*job.Job) map[job.State]int {
	counts := make(map[job.State]int, len(job.States))
	for _, s := range job.States {
		counts[s] = 0
	}
	for _, t := range tasks {
		counts[t.State]++
	}
	return counts
}

// DecodeInputs decodes a claimed task's inputs as a driver's claim
// aggregates them: a JSON array of {"ref", "state", "result", "error"}
// (result and error null for none); nil for none (a job without
// dependencies).
func DecodeInputs(raw []byte) (map[string]job.Input, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var rows []struct {
		Ref    string          `json:"ref"`
		State  job.State       `json:"state"`
		Result json.RawMessage `json:"result"`
		Error  *string         `json:"error"`
	}
	if err := json.Unmarshal(raw, &rows); err != nil {
		return nil, fmt.Errorf("decode inputs: %w", err)
	}
	inputs := make(map[string]job.Input, len(rows))
	for _, r := range rows {
		in := job.Input{State: r.State}
		if len(r.Result) > 0 && string(r.Result) != "null" {
			in.Result = r.Result
		}
		if r.Error != nil {
			in.Error = *r.Error
		}
		inputs[r.Ref] = in
	}
	return inputs, nil
}

// DecodeTaskColumns sets j's workflow columns from raw, the one JSON
// array every driver's whole-job statements select them as (so that a
// job outside workflows costs the client one NULL column, not seven):
// workflow_id, workflow_ref, run_on, wait_for, dependencies, pending,
// canceled_by, parent_id, child_key, each null when NULL. A child
// (parent_id set) selects them too.
func DecodeTaskColumns(j *job.Job, raw []byte) error {
	var (
		workflowID, canceledBy, parentID *uuid.UUID
		ref, runOn, waitFor, childKey    *string
		dependencies, pending            *int
	)
	cols := [9]any{&workflowID, &ref, &runOn, &waitFor, &dependencies, &pending, &canceledBy, &parentID, &childKey}
	if err := json.Unmarshal(raw, &cols); err != nil {
		return fmt.Errorf("decode its workflow columns %s: %w", raw, err)
	}
	if workflowID != nil {
		j.WorkflowID = *workflowID
	}
	if canceledBy != nil {
		j.CanceledBy = *canceledBy
	}
	if ref != nil {
		j.Ref = *ref
	}
	if runOn != nil {
		j.RunOn = job.RunOn(*runOn)
	}
	if waitFor != nil {
		j.WaitFor = job.WaitFor(*waitFor)
	}
	if dependencies != nil {
		j.Dependencies = *dependencies
	}
	if pending != nil {
		j.Pending = *pending
	}
	if parentID != nil {
		j.ParentID = *parentID
	}
	if childKey != nil {
		j.ChildKey = *childKey
	}
	return nil
}
