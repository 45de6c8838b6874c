package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// Workflow is a workflow to submit (SubmitWorkflow): jobs, its tasks,
// each named by a ref unique in it, some of which depend on others. A
// task runs once its dependencies succeeded, with their results as its
// inputs (Input); one whose dependency fails or is canceled is canceled
// too, unless it runs on any end (RunOnAny). See package job
// (workflow.go) and docs/workflows.md for the rules.
//
//	wf := engine.NewWorkflow("transcode")
//	download := wf.Task("download", job.InsertParams{Kind: "download", Args: args})
//	encode := wf.Task("encode-720p", job.InsertParams{Kind: "encode"}, engine.DependsOn(download))
//	wf.Task("publish", job.InsertParams{Kind: "publish"}, engine.DependsOn(encode))
//	res, err := e.SubmitWorkflow(ctx, wf)
//
// A Workflow is built by one goroutine; it keeps the first mistake of
// its building (a task named twice, a dependency from another
// workflow), which SubmitWorkflow returns.
type Workflow struct {
	name string
	// IdempotencyKey, when set, makes the submission idempotent: the same
	// key and workflow return the workflow submitted first (Created
	// false); the key with another workflow is refused
	// (job.ErrIdempotencyMismatch).
	IdempotencyKey string

	tasks []job.TaskParams
	refs  map[string]bool
	err   error
}

// NewWorkflow starts a workflow named name (the kind of work it does).
func NewWorkflow(name string) *Workflow {
	return &Workflow{name: name, refs: make(map[string]bool)}
}

// Task is a task of a Workflow being built: what a later task names as
// its dependency (DependsOn).
type Task struct {
	w   *Workflow
	ref string
}

// Ref is the task's ref.
func (t Task) Ref() string { return t.ref }

// TaskOption sets how a task depends on others.
type TaskOption func(w *Workflow, t *job.TaskParams)

// DependsOn makes the task depend on tasks, which must be of its
// workflow.
func DependsOn(tasks ...Task) TaskOption {
	return func(w *Workflow, t *job.TaskParams) {
		for _, d := range tasks {
			if d.w != w {
				w.fail(fmt.Errorf("engine: task %q depends on %q, a task of another workflow", t.Ref, d.ref))
				continue
			}
			t.DependsOn = append(t.DependsOn, d.ref)
		}
	}
}

// RunOnAny makes the task run once its dependencies are final, however
// they ended (job.RunOnAny): a cleanup or notify step, which sees their
// states and errors in its inputs.
func RunOnAny() TaskOption {
	return func(_ *Workflow, t *job.TaskParams) { t.RunOn = job.RunOnAny }
}

// Task adds a task named ref that runs the job p describes (every member
// a job submission has but its idempotency key and unique rule: the
// workflow's key covers its tasks), and returns it, to name as a
// dependency of later tasks.
func (w *Workflow) Task(ref string, p job.InsertParams, opts ...TaskOption) Task {
	if w.refs[ref] {
		w.fail(fmt.Errorf("engine: workflow %q has two tasks %q", w.name, ref))
	}
	w.refs[ref] = true
	t := job.TaskParams{Ref: ref, InsertParams: p}
	for _, o := range opts {
		o(w, &t)
	}
	w.tasks = append(w.tasks, t)
	return Task{w: w, ref: ref}
}

func (w *Workflow) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// Params returns the workflow as the store submits it.
func (w *Workflow) Params() job.WorkflowParams {
	return job.WorkflowParams{Name: w.name, IdempotencyKey: w.IdempotencyKey, Tasks: w.tasks}
}

// SubmitWorkflow inserts the workflow and all its tasks in one
// transaction (store.WorkflowStore.WorkflowSubmit): the tasks without
// dependencies queued, the others waiting; none when one is refused (a
// *job.ValidationError naming the task, "tasks[3].depends_on"). At most
// Config.WorkflowMaxTasks tasks.
func (e *Engine) SubmitWorkflow(ctx context.Context, w *Workflow) (*store.WorkflowSubmitResult, error) {
	return e.SubmitWorkflowTx(ctx, e.store, w)
}

// SubmitWorkflowTx is SubmitWorkflow through ex: in the transaction ex
// runs in (see InsertTx), the workflow existing once it commits.
func (e *Engine) SubmitWorkflowTx(ctx context.Context, ex store.Executor, w *Workflow) (*store.WorkflowSubmitResult, error) {
	if w.err != nil {
		return nil, w.err
	}
	p := w.Params()
	if e.cfg.LeaseTTL != job.DefaultLeaseTTL {
		tasks := make([]job.TaskParams, len(p.Tasks))
		for i, t := range p.Tasks {
			if t.LeaseTTL == 0 {
				t.LeaseTTL = e.cfg.LeaseTTL
			}
			tasks[i] = t
		}
		p.Tasks = tasks
	}
	res, err := ex.WorkflowSubmit(ctx, store.WorkflowSubmitParams{WorkflowParams: p, MaxTasks: e.cfg.WorkflowMaxTasks})
	if err != nil {
		return nil, fmt.Errorf("submit workflow %q: %w", w.name, err)
	}
	return res, nil
}

// Input decodes the result of the dependency ref of the task j runs, as
// T: its input (job.Job.Inputs), read from the store when the task was
// claimed. It fails when the task has no such dependency, when that
// dependency did not succeed (a task that runs on any end sees failed
// and canceled ones: their states and errors are in j.Inputs), or when
// its result is not a T. A success without a result is T's zero value.
//
//	enc, err := engine.Input[Rendition](j, "encode-720p")
func Input[T, A any](j *Job[A], ref string) (T, error) {
	var v T
	if j.Job == nil {
		return v, fmt.Errorf("engine: job has no inputs")
	}
	err := j.Job.DecodeInput(ref, &v)
	return v, err
}

// Args encodes v as a job's args (a JSON object): a convenience for the
// InsertParams of a workflow's tasks and of Insert. It panics when v does
// not encode: a programming error, as encoding a struct of plain fields
// never fails.
func Args(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("engine: args: %v", err))
	}
	return raw
}
