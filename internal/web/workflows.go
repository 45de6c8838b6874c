package web

import (
	"context"
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// workflowFilter is the workflows page's form.
type workflowFilter struct {
	Name, State string
}

// workflowsData is the workflows page.
type workflowsData struct {
	Filter    workflowFilter
	States    []job.WorkflowState
	Workflows []*job.Workflow
	// Next links the next page ("" on the last).
	Next template.URL
}

// workflows: GET /ui/workflows, newest first, filtered by name and
// state, paged by cursor (the last id of the page) as the jobs page is,
// without a total. Each row's counts are the workflow row's own
// counters, kept in the transaction of each task's end: the page reads
// no task.
func (s *server) workflows(w http.ResponseWriter, r *http.Request, v viewer) error {
	q := r.URL.Query()
	f := workflowFilter{Name: strings.TrimSpace(q.Get("name")), State: q.Get("state")}
	params := store.WorkflowListParams{Name: f.Name, Limit: pageSize + 1, NoTotal: true}
	if f.State != "" {
		params.States = []job.WorkflowState{job.WorkflowState(f.State)}
	}
	if after := q.Get("after"); after != "" {
		id, err := uuid.Parse(after)
		if err != nil {
			return badRequest("after must be a workflow id")
		}
		params.After = &id
	}
	if err := store.CheckWorkflowList(params); err != nil {
		return badRequest("%v", err)
	}
	res, err := s.store.WorkflowList(r.Context(), params)
	if err != nil {
		return err
	}
	d := workflowsData{Filter: f, States: job.WorkflowStates, Workflows: res.Workflows}
	if len(d.Workflows) > pageSize {
		d.Workflows = d.Workflows[:pageSize]
		next := url.Values{}
		for k, vs := range q {
			if k != "after" && k != "msg" {
				next[k] = vs
			}
		}
		next.Set("after", d.Workflows[pageSize-1].ID.String())
		d.Next = link("/ui/workflows", next)
	}
	s.render(w, r, v, http.StatusOK, "workflows", "Workflows", d)
	return nil
}

// stateCount is one state's count of a workflow's tasks.
type stateCount struct {
	State job.State
	Count int
}

// workflowData is a workflow's page.
type workflowData struct {
	Workflow *store.WorkflowDetail
	Graph    graph
	// Counts are its tasks by state, in the order of job.States.
	Counts []stateCount
	// Refs names each drawn task's id by its ref (for canceled_by).
	Refs map[uuid.UUID]string
	// Tasks are the tasks drawn, in id order.
	Tasks []*job.Job
	// RanFor is how long it ran, or has been running.
	RanFor string
	// Retryable: a task is failed or canceled.
	Retryable bool
	// PollMS is how often the page's script asks for the summary while
	// the workflow runs (pollPeriod).
	PollMS int64
}

// pollPeriod is how often a running workflow's page asks for its
// summary: every 2 s, and 2 s more per thousand tasks past the first
// thousand, since each summary reads every task (a workflow of 10 000
// tasks: every 20 s; its summary took 120 to 210 ms, see
// docs/dashboard.md).
func pollPeriod(tasks int) time.Duration {
	return 2 * time.Second * time.Duration(max(1, (tasks+999)/1000))
}

// workflow: GET /ui/workflows/{id}, the workflow, its counts, its graph
// (the first graphMaxNodes tasks), a table of the same tasks and its
// journal. While it runs, the page's script follows its tasks' states
// from workflowSummary.
func (s *server) workflow(w http.ResponseWriter, r *http.Request, v viewer) error {
	wf, err := s.readWorkflow(r.Context(), r)
	if err != nil {
		return err
	}
	d := workflowData{Workflow: wf, Graph: layoutGraph(wf.Tasks, wf.Edges, graphMaxNodes),
		Refs: make(map[uuid.UUID]string, len(wf.Tasks))}
	for _, st := range job.States {
		d.Counts = append(d.Counts, stateCount{State: st, Count: wf.Counts[st]})
	}
	d.Retryable = wf.Counts[job.StateFailed]+wf.Counts[job.StateCanceled] > 0
	d.PollMS = pollPeriod(len(wf.Tasks)).Milliseconds()
	d.Tasks = wf.Tasks[:len(d.Graph.Nodes)]
	for _, t := range wf.Tasks {
		d.Refs[t.ID] = t.Ref
	}
	end := s.clock.Now()
	if wf.FinishedAt != nil {
		end = *wf.FinishedAt
	}
	d.RanFor = humanDuration(end.Sub(wf.CreatedAt))
	s.render(w, r, v, http.StatusOK, "workflow", "Workflow "+wf.Name, d)
	return nil
}

// workflowSummaryData is what workflowSummary answers.
type workflowSummaryData struct {
	State  job.WorkflowState `json:"state"`
	Counts map[job.State]int `json:"counts"`
	// Tasks are the drawn tasks' states, by id.
	Tasks     map[uuid.UUID]job.State `json:"tasks"`
	UpdatedAt time.Time               `json:"updated_at"`
}

// workflowSummary: GET /ui/workflows/{id}/summary, the workflow's state,
// its counts and the states of the tasks its page draws, as JSON: the
// one request the workflow page's script repeats while the workflow
// runs, to recolour the nodes in place.
func (s *server) workflowSummary(w http.ResponseWriter, r *http.Request, v viewer) error {
	wf, err := s.readWorkflow(r.Context(), r)
	if err != nil {
		return err
	}
	drawn := wf.Tasks[:min(len(wf.Tasks), graphMaxNodes)]
	d := workflowSummaryData{State: wf.State, Counts: wf.Counts, UpdatedAt: wf.UpdatedAt,
		Tasks: make(map[uuid.UUID]job.State, len(drawn))}
	for _, t := range drawn {
		d.Tasks[t.ID] = t.State
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	return json.NewEncoder(w).Encode(d)
}

// cancelWorkflow: POST /ui/workflows/{id}/cancel, as POST
// /api/v1/workflows/{id}/cancel (the cancel scope, as a job's cancel).
func (s *server) cancelWorkflow(w http.ResponseWriter, r *http.Request, v viewer) error {
	return s.workflowAction(w, r, s.store.WorkflowCancel, func(wf *job.Workflow) string {
		if wf.State.Final() {
			return "Workflow canceled."
		}
		return "Workflow cancel requested: its running tasks stop at their holders' next heartbeat."
	})
}

// retryWorkflow: POST /ui/workflows/{id}/retry, as POST
// /api/v1/workflows/{id}/retry (the admin scope, as a job's retry).
func (s *server) retryWorkflow(w http.ResponseWriter, r *http.Request, v viewer) error {
	return s.workflowAction(w, r, s.store.WorkflowRetry, func(*job.Workflow) string {
		return "Workflow retried: its failed and canceled tasks run again."
	})
}

func (s *server) workflowAction(w http.ResponseWriter, r *http.Request, apply func(context.Context, uuid.UUID) (*job.Workflow, error), say func(*job.Workflow) string) error {
	id, err := workflowID(r)
	if err != nil {
		return err
	}
	wf, err := apply(r.Context(), id)
	if err != nil {
		return err
	}
	return done(w, r, "/ui/workflows/"+id.String(), say(wf))
}

func (s *server) readWorkflow(ctx context.Context, r *http.Request) (*store.WorkflowDetail, error) {
	id, err := workflowID(r)
	if err != nil {
		return nil, err
	}
	return s.store.WorkflowGet(ctx, id)
}

func workflowID(r *http.Request) (uuid.UUID, error) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		return uuid.Nil, notFound("no workflow %q", r.PathValue("id"))
	}
	return id, nil
}
