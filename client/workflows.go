package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
)

// Workflow is a workflow to submit (SubmitWorkflow): jobs, its tasks,
// each named by a ref unique in it, some of which depend on others. A
// task runs once its dependencies succeeded, with their results as its
// inputs (Input); one whose dependency fails or is canceled is canceled
// too, unless it runs on any end (RunOnAny). It mirrors the engine's
// builder (engine.NewWorkflow):
//
//	wf := client.NewWorkflow("transcode")
//	download := wf.Task("download", api.SubmitRequest{Queue: "media", Kind: "download"})
//	encode := wf.Task("encode-720p", api.SubmitRequest{Queue: "media", Kind: "encode"}, client.DependsOn(download))
//	wf.Task("publish", api.SubmitRequest{Queue: "media", Kind: "publish"}, client.DependsOn(encode))
//	w, created, err := c.SubmitWorkflow(ctx, wf)
//
// A Workflow is built by one goroutine; it keeps the first mistake of
// its building (a ref used twice, a dependency of another workflow),
// which SubmitWorkflow returns.
type Workflow struct {
	name string
	// IdempotencyKey, when set, makes the submission idempotent: the same
	// key and workflow return the workflow submitted first (created
	// false); the key with another workflow fails with an error matching
	// ErrIdempotencyMismatch.
	IdempotencyKey string

	tasks []api.WorkflowTaskRequest
	refs  map[string]bool
	err   error
}

// NewWorkflow starts a workflow named name (the kind of work it does).
func NewWorkflow(name string) *Workflow {
	return &Workflow{name: name, refs: make(map[string]bool)}
}

// TaskRef is a task of a Workflow being built: what a later task names
// as its dependency (DependsOn).
type TaskRef struct {
	w   *Workflow
	ref string
}

// Ref is the task's ref.
func (t TaskRef) Ref() string { return t.ref }

// TaskOption sets how a task depends on others.
type TaskOption func(w *Workflow, t *api.WorkflowTaskRequest)

// DependsOn makes the task depend on tasks, which must be of its
// workflow.
func DependsOn(tasks ...TaskRef) TaskOption {
	return func(w *Workflow, t *api.WorkflowTaskRequest) {
		for _, d := range tasks {
			if d.w != w {
				w.fail(fmt.Errorf("jobd client: task %q depends on %q, a task of another workflow", t.Ref, d.ref))
				continue
			}
			t.DependsOn = append(t.DependsOn, d.ref)
		}
	}
}

// RunOnAny makes the task run once its dependencies are final, however
// they ended (api.RunOnAny): a cleanup or notify step, which sees their
// states and errors in its inputs.
func RunOnAny() TaskOption {
	return func(_ *Workflow, t *api.WorkflowTaskRequest) { t.RunOn = api.RunOnAny }
}

// Task adds a task named ref that runs the job req describes (every
// member of a submission but its idempotency key and unique rule: the
// workflow's key covers its tasks), and returns it, to name as a
// dependency of later tasks.
func (w *Workflow) Task(ref string, req api.SubmitRequest, opts ...TaskOption) TaskRef {
	if w.refs[ref] {
		w.fail(fmt.Errorf("jobd client: workflow %q has two tasks %q", w.name, ref))
	}
	w.refs[ref] = true
	t := api.WorkflowTaskRequest{SubmitRequest: req, Ref: ref}
	for _, o := range opts {
		o(w, &t)
	}
	w.tasks = append(w.tasks, t)
	return TaskRef{w: w, ref: ref}
}

func (w *Workflow) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// Request returns the workflow as POST /api/v1/workflows takes it, or the
// first mistake of its building.
func (w *Workflow) Request() (api.WorkflowRequest, error) {
	return api.WorkflowRequest{Name: w.name, IdempotencyKey: w.IdempotencyKey, Tasks: w.tasks}, w.err
}

// SubmitWorkflow submits w: every task inserted in one transaction, or
// none (an *Error whose Problem.Field names the task's member,
// "tasks[3].depends_on"). created is false when its idempotency key
// matched a workflow of the same request; to a key without the read
// scope the server then tells only its ID and State.
func (c *Client) SubmitWorkflow(ctx context.Context, w *Workflow) (wf *api.Workflow, created bool, err error) {
	req, err := w.Request()
	if err != nil {
		return nil, false, err
	}
	return c.SubmitWorkflowRequest(ctx, req)
}

// SubmitWorkflowRequest is SubmitWorkflow of a request as it is on the
// wire (read from a file, say).
func (c *Client) SubmitWorkflowRequest(ctx context.Context, req api.WorkflowRequest) (wf *api.Workflow, created bool, err error) {
	wf = new(api.Workflow)
	status, _, err := c.do(ctx, http.MethodPost, "/api/v1/workflows", nil, req, wf)
	if err != nil {
		return nil, false, err
	}
	return wf, status == http.StatusCreated, nil
}

// GetWorkflow returns a workflow with its tasks, edges, counts by state
// and journal.
func (c *Client) GetWorkflow(ctx context.Context, id uuid.UUID) (*api.Workflow, error) {
	var wf api.Workflow
	if _, _, err := c.do(ctx, http.MethodGet, "/api/v1/workflows/"+id.String(), nil, nil, &wf); err != nil {
		return nil, err
	}
	return &wf, nil
}

// CancelWorkflow cancels every task of a workflow that is not final
// (running ones when their workers next hear of it) and returns the
// workflow's row. errors.Is(err, ErrConflict) when it is final.
func (c *Client) CancelWorkflow(ctx context.Context, id uuid.UUID) (*api.Workflow, error) {
	return c.postWorkflow(ctx, id, "cancel")
}

// RetryWorkflow retries every failed or canceled task of a workflow
// (tasks that succeeded do not run again) and returns its row.
// errors.Is(err, ErrConflict) when no task is failed or canceled.
func (c *Client) RetryWorkflow(ctx context.Context, id uuid.UUID) (*api.Workflow, error) {
	return c.postWorkflow(ctx, id, "retry")
}

func (c *Client) postWorkflow(ctx context.Context, id uuid.UUID, action string) (*api.Workflow, error) {
	var wf api.Workflow
	if _, _, err := c.do(ctx, http.MethodPost, "/api/v1/workflows/"+id.String()+"/"+action, nil, nil, &wf); err != nil {
		return nil, err
	}
	return &wf, nil
}

// WorkflowListOptions filters ListWorkflows. Zero fields do not filter.
type WorkflowListOptions struct {
	Name   string
	States []api.WorkflowState
	// Cursor starts after a page: the NextCursor of the previous one.
	Cursor string
	// Limit is the page size (server default 50, at most 200).
	Limit int
}

func (o WorkflowListOptions) query() url.Values {
	q := url.Values{}
	if o.Name != "" {
		q.Set("name", o.Name)
	}
	for _, s := range o.States {
		q.Add("state", string(s))
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	return q
}

// ListWorkflowsPage returns one page of workflows, newest first; page on
// with NextCursor.
func (c *Client) ListWorkflowsPage(ctx context.Context, opts WorkflowListOptions) (*api.WorkflowList, error) {
	var out api.WorkflowList
	if _, _, err := c.do(ctx, http.MethodGet, "/api/v1/workflows", opts.query(), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListWorkflows iterates over every matching workflow, newest first, a
// page (opts.Limit) at a time, following the cursor; an error ends it.
func (c *Client) ListWorkflows(ctx context.Context, opts WorkflowListOptions) iter.Seq2[api.Workflow, error] {
	return func(yield func(api.Workflow, error) bool) {
		for {
			page, err := c.ListWorkflowsPage(ctx, opts)
			if err != nil {
				yield(api.Workflow{}, err)
				return
			}
			for _, wf := range page.Workflows {
				if !yield(wf, nil) {
					return
				}
			}
			if page.NextCursor == "" {
				return
			}
			opts.Cursor = page.NextCursor
		}
	}
}

// DefaultWorkflowPoll is how often WaitWorkflow reads a workflow.
const DefaultWorkflowPoll = 500 * time.Millisecond

// WaitWorkflow blocks until the workflow is final and returns it.
// onUpdate (may be nil) is called with the workflow as it is now and
// again each time one of its tasks changes state, from WaitWorkflow's
// goroutine. It reads the workflow every DefaultWorkflowPoll; a failed
// read that may succeed again (IsRetryable) is read again, any other
// error returned.
func (c *Client) WaitWorkflow(ctx context.Context, id uuid.UUID, onUpdate func(api.Workflow)) (*api.Workflow, error) {
	var last *api.Workflow
	tick := time.NewTicker(DefaultWorkflowPoll)
	defer tick.Stop()
	for {
		wf, err := c.GetWorkflow(ctx, id)
		switch {
		case err != nil && !IsRetryable(err):
			return last, err
		case err == nil:
			if onUpdate != nil && (last == nil || workflowChanged(*last, *wf)) {
				onUpdate(*wf)
			}
			last = wf
			if wf.State.Final() {
				return wf, nil
			}
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-tick.C:
		}
	}
}

// workflowChanged reports whether a workflow's state or a task's state
// differs between two reads.
func workflowChanged(a, b api.Workflow) bool {
	if a.State != b.State || len(a.Tasks) != len(b.Tasks) {
		return true
	}
	for i := range a.Tasks {
		if a.Tasks[i].State != b.Tasks[i].State {
			return true
		}
	}
	return !reflect.DeepEqual(a.Counts, b.Counts)
}

// DecodeInput decodes into v the result of the dependency ref of a
// claimed workflow task (its Job.Inputs). It fails, saying why, when
// the task has no such dependency, when that dependency did not succeed
// (its state and error: a task that runs on any end sees those in
// Job.Inputs), or when its result does not decode into v; a success
// without a result leaves v as it is.
func (t *Task[A]) DecodeInput(ref string, v any) error {
	in, ok := t.Job.Inputs[ref]
	if !ok {
		return fmt.Errorf("jobd client: job %s has no input %q", t.Job.ID, ref)
	}
	if in.State != api.StateSucceeded {
		if in.Error != "" {
			return fmt.Errorf("jobd client: input %q is %s: %s", ref, in.State, in.Error)
		}
		return fmt.Errorf("jobd client: input %q is %s", ref, in.State)
	}
	raw := bytes.TrimSpace(in.Result)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("jobd client: decode input %q: %w", ref, err)
	}
	return nil
}

// Input decodes the result of the dependency ref of the claimed task t
// as a T (see Task.DecodeInput), as engine.Input does a job's:
//
//	src, err := client.Input[File](t, "download")
func Input[T, A any](t *Task[A], ref string) (T, error) {
	var v T
	err := t.DecodeInput(ref, &v)
	return v, err
}
