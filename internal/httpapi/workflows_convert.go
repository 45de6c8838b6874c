package httpapi

import (
	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// toAPIWorkflow shows a workflow's row: no tasks, edges or journal.
func toAPIWorkflow(w *job.Workflow) api.Workflow {
	return api.Workflow{ID: w.ID, Name: w.Name, State: api.WorkflowState(w.State), IdempotencyKey: w.IdempotencyKey,
		TaskCount: w.TaskCount, Succeeded: w.Succeeded, Failed: w.Failed, Canceled: w.Canceled,
		CreatedAt: w.CreatedAt.UTC(), UpdatedAt: w.UpdatedAt.UTC(), FinishedAt: utc(w.FinishedAt)}
}

// toAPIWorkflowDetail shows a workflow with its tasks (their
// dependencies by ref), edges, counts by state and journal.
func toAPIWorkflowDetail(d *store.WorkflowDetail) api.Workflow {
	out := toAPIWorkflow(&d.Workflow)
	refs := make(map[uuid.UUID]string, len(d.Tasks))
	for _, t := range d.Tasks {
		refs[t.ID] = t.Ref
	}
	deps := make(map[uuid.UUID][]string, len(d.Tasks))
	out.Edges = make([]api.WorkflowEdge, len(d.Edges))
	for i, e := range d.Edges {
		deps[e.Task] = append(deps[e.Task], refs[e.DependsOn])
		out.Edges[i] = api.WorkflowEdge{Task: refs[e.Task], DependsOn: refs[e.DependsOn]}
	}
	out.Tasks = make([]api.WorkflowTask, len(d.Tasks))
	for i, t := range d.Tasks {
		out.Tasks[i] = toAPITask(t, deps[t.ID], refs)
	}
	out.Counts = make(map[api.State]int, len(d.Counts))
	for st, n := range d.Counts {
		out.Counts[api.State(st)] = n
	}
	out.Events = make([]api.WorkflowEvent, len(d.Events))
	for i, e := range d.Events {
		out.Events[i] = api.WorkflowEvent{ID: e.ID, At: e.At.UTC(), Kind: string(e.Kind), Detail: e.Detail}
	}
	return out
}

// toAPITask shows one task of a workflow's detail; dependsOn are its
// dependencies' refs, refs every task's ref by id.
func toAPITask(t *job.Job, dependsOn []string, refs map[uuid.UUID]string) api.WorkflowTask {
	if dependsOn == nil {
		dependsOn = []string{}
	}
	j := toAPIJob(t)
	return api.WorkflowTask{ID: t.ID, Ref: t.Ref, Queue: t.Queue, Kind: t.Kind, State: api.State(t.State),
		RunOn: string(t.RunOn), DependsOn: dependsOn, Pending: t.Pending, Attempt: t.Attempt, Error: j.Error,
		CanceledBy: refs[t.CanceledBy], CreatedAt: j.CreatedAt, StartedAt: j.StartedAt, FinishedAt: j.FinishedAt}
}
