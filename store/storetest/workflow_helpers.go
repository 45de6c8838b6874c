package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// wtask is a task of kind "k" in queue with ref and dependencies.
func wtask(queue, ref string, deps ...string) job.TaskParams {
	return job.TaskParams{Ref: ref, DependsOn: deps, InsertParams: job.InsertParams{Queue: queue, Kind: "k"}}
}

// wflow is a submitted workflow: its result and its tasks by ref.
type wflow struct {
	*store.WorkflowSubmitResult
	byRef map[string]*job.Job
}

// id returns the id of the task ref.
func (f wflow) id(t *testing.T, ref string) uuid.UUID {
	t.Helper()
	j, ok := f.byRef[ref]
	if !ok {
		t.Fatalf("workflow %s has no task %q", f.Workflow.ID, ref)
	}
	return j.ID
}

// submit submits a workflow named name of tasks, which must be created.
func (e *env) submit(t *testing.T, name string, tasks ...job.TaskParams) wflow {
	t.Helper()
	res, err := e.s.WorkflowSubmit(t.Context(), store.WorkflowSubmitParams{WorkflowParams: job.WorkflowParams{Name: name, Tasks: tasks}})
	if err != nil {
		t.Fatalf("WorkflowSubmit %s: %v", name, err)
	}
	if !res.Created || len(res.Tasks) != len(tasks) {
		t.Fatalf("WorkflowSubmit %s: created %v, %d tasks; want created with %d", name, res.Created, len(res.Tasks), len(tasks))
	}
	f := wflow{WorkflowSubmitResult: res, byRef: make(map[string]*job.Job)}
	for i, j := range res.Tasks {
		if j.Ref != tasks[i].Ref || j.WorkflowID != res.Workflow.ID {
			t.Fatalf("WorkflowSubmit %s: task %d is %q of workflow %s, want %q of %s", name, i, j.Ref, j.WorkflowID, tasks[i].Ref, res.Workflow.ID)
		}
		f.byRef[j.Ref] = j
	}
	return f
}

// taskOf reads the task ref of f.
func (e *env) taskOf(t *testing.T, f wflow, ref string) *job.Job {
	t.Helper()
	return e.get(t, f.id(t, ref))
}

// wantTaskStates requires the tasks of f to be in the states want (ref
// to state).
func (e *env) wantTaskStates(t *testing.T, f wflow, want map[string]job.State) {
	t.Helper()
	for ref, st := range want {
		if got := e.taskOf(t, f, ref); got.State != st {
			t.Errorf("task %q: state %s (last error %q), want %s", ref, got.State, got.LastError, st)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// workflow reads f's workflow.
func (e *env) workflow(t *testing.T, id uuid.UUID) *store.WorkflowDetail {
	t.Helper()
	d, err := e.s.WorkflowGet(t.Context(), id)
	if err != nil {
		t.Fatalf("WorkflowGet %s: %v", id, err)
	}
	return d
}

// wantWorkflow requires f's workflow to be in state with the counts of
// final tasks.
func (e *env) wantWorkflow(t *testing.T, f wflow, state job.WorkflowState, succeeded, failed, canceled int) *store.WorkflowDetail {
	t.Helper()
	d := e.workflow(t, f.Workflow.ID)
	if d.State != state || d.Succeeded != succeeded || d.Failed != failed || d.Canceled != canceled {
		t.Fatalf("workflow %s: %s with %d/%d/%d succeeded/failed/canceled, want %s with %d/%d/%d", d.Name,
			d.State, d.Succeeded, d.Failed, d.Canceled, state, succeeded, failed, canceled)
	}
	if (d.FinishedAt != nil) != state.Final() {
		t.Fatalf("workflow %s: %s, finished_at %v", d.Name, d.State, d.FinishedAt)
	}
	counted := d.Counts[job.StateSucceeded] == succeeded && d.Counts[job.StateFailed] == failed && d.Counts[job.StateCanceled] == canceled
	if !counted {
		t.Fatalf("workflow %s: counters %d/%d/%d, its tasks %v", d.Name, d.Succeeded, d.Failed, d.Canceled, d.Counts)
	}
	return d
}

// claimRefs claims up to max jobs of queue and requires exactly the tasks
// refs of f, in any order.
func (e *env) claimRefs(t *testing.T, f wflow, queue string, max int, refs ...string) []*job.Job {
	t.Helper()
	got := e.claim(t, queue, max)
	var gotRefs []string
	for _, j := range got {
		gotRefs = append(gotRefs, j.Ref)
	}
	slices.Sort(gotRefs)
	want := slices.Clone(refs)
	slices.Sort(want)
	if !slices.Equal(gotRefs, want) {
		t.Fatalf("JobClaim %q: tasks %q, want %q", queue, gotRefs, want)
	}
	for _, j := range got {
		if j.WorkflowID != f.Workflow.ID {
			t.Fatalf("JobClaim %q: task %q of workflow %s, want %s", queue, j.Ref, j.WorkflowID, f.Workflow.ID)
		}
	}
	return got
}

// succeedWith finishes j succeeded with result (JSON).
func (e *env) succeedWith(t *testing.T, j *job.Job, result string) {
	t.Helper()
	e.finishOne(t, store.Outcome{Lease: leaseOf(j), Outcome: job.Outcome{Status: store.OutcomeSucceeded, Result: json.RawMessage(result)}})
}

// failFor finishes j failed for good with error msg.
func (e *env) failFor(t *testing.T, j *job.Job, msg string) {
	t.Helper()
	if r := e.finishOne(t, store.Outcome{Lease: leaseOf(j), Outcome: job.Outcome{Status: store.OutcomeFailed, Error: msg}}); r.State != job.StateFailed {
		t.Fatalf("fail %q: %s, want failed", j.Ref, r.State)
	}
}

// wantInput requires j's input ref to be in state with result and error.
func wantInput(t *testing.T, j *job.Job, ref string, state job.State, result, errText string) {
	t.Helper()
	in, ok := j.Inputs[ref]
	if !ok {
		t.Fatalf("task %q: no input %q (inputs %v)", j.Ref, ref, j.Inputs)
	}
	if in.State != state || in.Error != errText {
		t.Fatalf("task %q: input %q %s %q, want %s %q", j.Ref, ref, in.State, in.Error, state, errText)
	}
	if result == "" && len(in.Result) != 0 || result != "" && !jsonEqual(in.Result, []byte(result)) {
		t.Fatalf("task %q: input %q result %s, want %s", j.Ref, ref, in.Result, result)
	}
}

// workflowEvents takes the outbox's workflow.finished events.
func (e *env) workflowEvents(t *testing.T) []store.WebhookEvent {
	t.Helper()
	evs, err := e.s.WebhookEventsTake(t.Context(), 10000)
	if err != nil {
		t.Fatalf("WebhookEventsTake: %v", err)
	}
	var out []store.WebhookEvent
	for _, ev := range evs {
		if ev.Type == store.WebhookWorkflowFinished {
			out = append(out, ev)
		}
	}
	return out
}

// wfKinds lists the kinds of a workflow's journal.
func wfKinds(evs []job.WorkflowEvent) string {
	s := ""
	for i, e := range evs {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprint(e.Kind)
	}
	return s
}

// wantField requires err to be a *job.ValidationError naming field.
func wantField(t *testing.T, what string, err error, field string) {
	t.Helper()
	var ve *job.ValidationError
	if !errors.As(err, &ve) || ve.Field != field {
		t.Fatalf("%s: %v, want a *job.ValidationError naming %s", what, err, field)
	}
}
