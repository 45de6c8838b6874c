package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/problem"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// workflowBody is the body of POST /api/v1/workflows
// (api.WorkflowRequest), its tasks kept raw: each is decoded and checked
// on its own, as a batch's jobs are.
type workflowBody struct {
	Name           string            `json:"name"`
	IdempotencyKey string            `json:"idempotency_key"`
	Tasks          []json.RawMessage `json:"tasks"`
}

// taskBody is one task of a workflow (api.WorkflowTaskRequest): a job
// submission, read as POST /api/v1/jobs reads one, with its ref, its
// dependencies and when it runs.
type taskBody struct {
	submitBody
	Ref       string   `json:"ref"`
	DependsOn []string `json:"depends_on"`
	RunOn     string   `json:"run_on"`
}

// submitWorkflow: POST /api/v1/workflows → 201 with the workflow (its
// tasks, edges and journal), or 200 when its idempotency key matched a
// workflow of the same request (in full to a caller who may read, else
// its id and state). Each task is checked as POST /api/v1/jobs checks a
// job (checkCallerJob: jobd's own names, the caller's queues, the
// store's rules), its problem naming "tasks[i].member"; the store then
// checks the graph (refs, dependencies, cycles, the task limit) and
// inserts every task in one transaction, or none.
func (s *server) submitWorkflow(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	var body workflowBody
	if err := s.decodeOuter(w, r, &body); err != nil {
		return err
	}
	p, err := s.workflowParams(r, &body)
	if err != nil {
		return err
	}
	res, err := s.store.WorkflowSubmit(r.Context(), store.WorkflowSubmitParams{WorkflowParams: p, MaxTasks: s.cfg.WorkflowMaxTasks})
	if err != nil {
		return err
	}
	wf := res.Workflow
	if !res.Created && !callerOf(r).Grants(api.ScopeRead) {
		return writeJSON(w, http.StatusOK, api.WorkflowReplay{ID: wf.ID, State: api.WorkflowState(wf.State)})
	}
	d, err := s.store.WorkflowGet(r.Context(), wf.ID)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
		w.Header().Set("Location", "/api/v1/workflows/"+wf.ID.String())
		s.obs.Workflows.WorkflowStarted(wf.Name)
	}
	return writeJSON(w, status, toAPIWorkflowDetail(d))
}

// workflowParams checks the body's tasks, each as a job submission of
// the caller's (decodeMember, checkCallerJob), and returns the workflow
// to submit. More tasks than the limit are refused before any is read.
func (s *server) workflowParams(r *http.Request, body *workflowBody) (job.WorkflowParams, error) {
	p := job.WorkflowParams{Name: body.Name, IdempotencyKey: body.IdempotencyKey}
	// The workflow's key, like a job's, may not take the forms jobd
	// derives for its own (job.CheckCallerInsert names idempotency_key).
	if err := job.CheckCallerInsert(&job.InsertParams{IdempotencyKey: body.IdempotencyKey}); err != nil {
		return p, err
	}
	if n, maxTasks := len(body.Tasks), s.cfg.WorkflowMaxTasks; n > maxTasks {
		return p, job.Invalid(taskField(maxTasks, ""), "is task %d of %d, over the limit of %d tasks a workflow may hold", maxTasks+1, n, maxTasks)
	}
	tp := r.Header.Get("traceparent")
	p.Tasks = make([]job.TaskParams, len(body.Tasks))
	for i, raw := range body.Tasks {
		var b taskBody
		if err := decodeMember(raw, &b); err != nil {
			return p, inTask(i, unembed(err))
		}
		ip, err := s.checkCallerJob(r, &b.submitBody)
		if err != nil {
			return p, inTask(i, err)
		}
		if job.ValidTraceParent(tp) {
			ip.TraceParent = tp
		}
		p.Tasks[i] = job.TaskParams{Ref: b.Ref, DependsOn: b.DependsOn, RunOn: job.RunOn(b.RunOn), InsertParams: ip}
	}
	return p, nil
}

// taskField names a member of the task at index i ("" for the task).
func taskField(i int, field string) string {
	if field == "" {
		return fmt.Sprintf("tasks[%d]", i)
	}
	return fmt.Sprintf("tasks[%d].%s", i, field)
}

// inTask makes err, a problem of a job submission's member, name that
// member of the task at index i.
func inTask(i int, err error) error {
	var verr *job.ValidationError
	var perr *problem.Error
	switch {
	case errors.As(err, &verr):
		return &job.ValidationError{Field: taskField(i, verr.Field), Reason: verr.Reason}
	case errors.As(err, &perr):
		cp := *perr
		cp.Field = taskField(i, perr.Field)
		return &cp
	}
	return fmt.Errorf("%s: %w", taskField(i, ""), err)
}

// unembed names a member of a task's job as the caller wrote it:
// encoding/json names one of the embedded submitBody "submitBody.timeout".
func unembed(err error) error {
	var perr *problem.Error
	if !errors.As(err, &perr) || !strings.HasPrefix(perr.Field, "submitBody.") {
		return err
	}
	cp := *perr
	cp.Field = strings.TrimPrefix(cp.Field, "submitBody.")
	cp.Detail = strings.ReplaceAll(cp.Detail, "submitBody.", "")
	return &cp
}

// getWorkflow: GET /api/v1/workflows/{id}: the workflow with its tasks,
// edges, counts and journal.
func (s *server) getWorkflow(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	id, err := pathID(r)
	if err != nil {
		return err
	}
	d, err := s.callerWorkflow(r, id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, toAPIWorkflowDetail(d))
}

// callerWorkflow reads workflow id for the caller: job.ErrNotFound,
// exactly as for an unknown id, when the caller is limited to queues and
// a task of the workflow is in a queue it is not limited to. A task's
// queue never changes, nor a workflow's tasks.
func (s *server) callerWorkflow(r *http.Request, id uuid.UUID) (*store.WorkflowDetail, error) {
	d, err := s.store.WorkflowGet(r.Context(), id)
	if err != nil {
		return nil, err
	}
	if !allowsWorkflow(callerOf(r), d) {
		return nil, fmt.Errorf("workflow %s has a task of a queue the caller is not limited to: %w", id, job.ErrNotFound)
	}
	return d, nil
}

// allowsWorkflow reports whether p may see workflow d: every task's
// queue is one p allows.
func allowsWorkflow(p Principal, d *store.WorkflowDetail) bool {
	if !p.Limited() {
		return true
	}
	for _, t := range d.Tasks {
		if !p.Allows(t.Queue) {
			return false
		}
	}
	return true
}

// cancelWorkflow: POST /api/v1/workflows/{id}/cancel, scope cancel (or
// admin): every task not final canceled (running ones asked to stop).
// 200 with the workflow (without its tasks); 409 when it is final.
func (s *server) cancelWorkflow(w http.ResponseWriter, r *http.Request) error {
	return s.workflowTransition(w, r, s.store.WorkflowCancel)
}

// retryWorkflow: POST /api/v1/workflows/{id}/retry, scope admin: every
// failed or canceled task retried, the tasks canceled because of them
// restored. 200 with the workflow (without its tasks); 409 when no task
// is failed or canceled.
func (s *server) retryWorkflow(w http.ResponseWriter, r *http.Request) error {
	return s.workflowTransition(w, r, s.store.WorkflowRetry)
}

func (s *server) workflowTransition(w http.ResponseWriter, r *http.Request, apply func(ctx context.Context, id uuid.UUID) (*job.Workflow, error)) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	id, err := pathID(r)
	if err != nil {
		return err
	}
	if callerOf(r).Limited() {
		if _, err := s.callerWorkflow(r, id); err != nil {
			return err
		}
	}
	wf, err := apply(r.Context(), id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, toAPIWorkflow(wf))
}
