package httpapi_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/store"
)

// submitWorkflow posts a workflow body and returns the answer's
// workflow, checking the status.
func (s *testServer) submitWorkflow(t *testing.T, body string, status int, hdr ...string) api.Workflow {
	t.Helper()
	var wf api.Workflow
	s.do("POST", "/api/v1/workflows", body, hdr...).must(t, status, &wf)
	return wf
}

// getWorkflow reads a workflow's detail.
func (s *testServer) getWorkflow(t *testing.T, id fmt.Stringer) api.Workflow {
	t.Helper()
	var wf api.Workflow
	s.do("GET", "/api/v1/workflows/"+id.String(), "").must(t, 200, &wf)
	return wf
}

// claimAll claims up to max jobs of queue over HTTP, by ref.
func (w *remoteWorker) claimAll(t *testing.T, queue string, max int) map[string]api.ClaimedJob {
	t.Helper()
	var got api.ClaimResponse
	w.do("POST", "/api/v1/worker/claim", fmt.Sprintf(`{"queues":[%q],"max":%d}`, queue, max)).must(t, 200, &got)
	out := make(map[string]api.ClaimedJob, len(got.Jobs))
	for _, j := range got.Jobs {
		out[j.Ref] = j
	}
	return out
}

// refsOf are the refs of claimed jobs, sorted.
func refsOf(jobs map[string]api.ClaimedJob) []string {
	refs := make([]string, 0, len(jobs))
	for ref := range jobs {
		refs = append(refs, ref)
	}
	slices.Sort(refs)
	return refs
}

// taskOf is the task ref of a workflow's detail.
func taskOf(t *testing.T, wf api.Workflow, ref string) api.WorkflowTask {
	t.Helper()
	for _, task := range wf.Tasks {
		if task.Ref == ref {
			return task
		}
	}
	t.Fatalf("workflow %s has no task %q", wf.ID, ref)
	return api.WorkflowTask{}
}

// diamond is A → B, C → D on queue wf.
const diamond = `{"name":"diamond","tasks":[
	{"ref":"A","kind":"k","queue":"wf","args":{"n":1}},
	{"ref":"B","kind":"k","queue":"wf","depends_on":["A"]},
	{"ref":"C","kind":"k","queue":"wf","depends_on":["A"]},
	{"ref":"D","kind":"k","queue":"wf","depends_on":["B","C"],"timeout":"30s"}]}`

// TestWorkflowDiamond: a diamond submitted over HTTP is 201 with its
// tasks (A queued, the others waiting), edges, counts and journal; a
// remote worker claims only what is released, in order, and D's claimed
// inputs are B's and C's results (not A's); every job rendering shows
// its workflow_id and ref; the workflow ends succeeded.
func TestWorkflowDiamond(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		w := s.registerWorker(t, "w1")
		r := s.do("POST", "/api/v1/workflows", diamond)
		var wf api.Workflow
		r.must(t, 201, &wf)
		if loc := r.header.Get("Location"); loc != "/api/v1/workflows/"+wf.ID.String() {
			t.Fatalf("Location %q", loc)
		}
		if wf.Name != "diamond" || wf.State != api.WorkflowRunning || wf.TaskCount != 4 || len(wf.Tasks) != 4 || len(wf.Edges) != 4 {
			t.Fatalf("workflow %+v", wf)
		}
		if wf.Counts[api.StateQueued] != 1 || wf.Counts[api.StateWaiting] != 3 || len(wf.Events) != 1 || wf.Events[0].Kind != "submitted" {
			t.Fatalf("counts %v, events %+v", wf.Counts, wf.Events)
		}
		if d := taskOf(t, wf, "D"); d.State != api.StateWaiting || d.Pending != 2 || !slices.Equal(d.DependsOn, []string{"B", "C"}) || d.RunOn != api.RunOnSuccess {
			t.Fatalf("task D %+v", d)
		}

		got := w.claimAll(t, "wf", 10)
		if !slices.Equal(refsOf(got), []string{"A"}) || got["A"].Inputs != nil {
			t.Fatalf("first claim %v, want A without inputs", refsOf(got))
		}
		if a := got["A"]; a.WorkflowID == nil || *a.WorkflowID != wf.ID {
			t.Fatalf("claimed A workflow_id %v, want %s", a.WorkflowID, wf.ID)
		}
		w.outcome(got["A"], "complete", `,"result":{"a":1}`).must(t, 200, nil)
		got = w.claimAll(t, "wf", 10)
		if !slices.Equal(refsOf(got), []string{"B", "C"}) {
			t.Fatalf("second claim %v, want B and C", refsOf(got))
		}
		for _, ref := range []string{"B", "C"} {
			in := got[ref].Inputs
			if len(in) != 1 || in["A"].State != api.StateSucceeded || string(in["A"].Result) != `{"a":1}` {
				t.Fatalf("%s's inputs %+v, want A's result", ref, in)
			}
		}
		w.outcome(got["B"], "complete", `,"result":{"b":2}`).must(t, 200, nil)
		if n := len(w.claimAll(t, "wf", 10)); n != 0 {
			t.Fatalf("D claimed before C ended (%d claimed)", n)
		}
		w.outcome(got["C"], "complete", `,"result":"c"`).must(t, 200, nil)
		got = w.claimAll(t, "wf", 10)
		d := got["D"]
		if !slices.Equal(refsOf(got), []string{"D"}) || len(d.Inputs) != 2 ||
			string(d.Inputs["B"].Result) != `{"b":2}` || string(d.Inputs["C"].Result) != `"c"` || d.Timeout == nil {
			t.Fatalf("third claim %v, D's inputs %+v", refsOf(got), d.Inputs)
		}
		var job api.Job
		s.do("GET", "/api/v1/jobs/"+d.ID.String(), "").must(t, 200, &job)
		if job.WorkflowID == nil || *job.WorkflowID != wf.ID || job.Ref != "D" {
			t.Fatalf("GET job D: workflow_id %v, ref %q", job.WorkflowID, job.Ref)
		}
		var plain api.Job
		s.do("POST", "/api/v1/jobs", `{"kind":"k"}`).must(t, 201, &plain)
		if raw := s.do("GET", "/api/v1/jobs/"+plain.ID.String(), "").body; !strings.Contains(string(raw), `"workflow_id":null,"ref":""`) {
			t.Fatalf("a job outside workflows: %s", raw)
		}
		w.outcome(d, "complete", "").must(t, 200, nil)

		wf = s.getWorkflow(t, wf.ID)
		if wf.State != api.WorkflowSucceeded || wf.Succeeded != 4 || wf.Counts[api.StateSucceeded] != 4 || wf.FinishedAt == nil {
			t.Fatalf("workflow at the end %+v", wf)
		}
		if last := wf.Events[len(wf.Events)-1]; last.Kind != "succeeded" {
			t.Fatalf("journal %+v, want it to end succeeded", wf.Events)
		}
		for _, task := range wf.Tasks {
			if task.State != api.StateSucceeded || task.StartedAt == nil || task.FinishedAt == nil || task.Attempt != 1 {
				t.Fatalf("task %+v", task)
			}
		}
	})
}

// fanBody is a workflow of a root, n parts depending on it and a join
// depending on every part.
func fanBody(n int) string {
	var b strings.Builder
	b.WriteString(`{"name":"fan","tasks":[{"ref":"root","kind":"k","queue":"fan"}`)
	deps := make([]string, n)
	for i := range n {
		fmt.Fprintf(&b, `,{"ref":"part-%d","kind":"k","queue":"fan","depends_on":["root"]}`, i)
		deps[i] = fmt.Sprintf("%q", fmt.Sprintf("part-%d", i))
	}
	fmt.Fprintf(&b, `,{"ref":"join","kind":"k","queue":"fan","depends_on":[%s]}]}`, strings.Join(deps, ","))
	return b.String()
}

// TestWorkflowFanOutFanIn: a root, 500 parts released together by its
// success, and a join released only by the last part's success, which
// receives the 500 results by ref through a remote worker's claim.
func TestWorkflowFanOutFanIn(t *testing.T) {
	const n = 500
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		w := s.registerWorker(t, "w1")
		wf := s.submitWorkflow(t, fanBody(n), 201)
		if wf.TaskCount != n+2 || wf.Counts[api.StateWaiting] != n+1 {
			t.Fatalf("workflow %d tasks, counts %v", wf.TaskCount, wf.Counts)
		}
		root := w.claimAll(t, "fan", 1000)
		w.outcome(root["root"], "complete", "").must(t, 200, nil)
		parts := w.claimAll(t, "fan", 1000)
		if len(parts) != n {
			t.Fatalf("claimed %d parts, want %d", len(parts), n)
		}
		var outcomes []string
		for ref, cj := range parts {
			i := strings.TrimPrefix(ref, "part-")
			outcomes = append(outcomes, fmt.Sprintf(`{"id":%q,"lease_token":%q,"outcome":"complete","result":{"i":%s}}`, cj.ID, cj.LeaseToken, i))
		}
		last := outcomes[len(outcomes)-1]
		w.do("POST", "/api/v1/worker/outcomes", `{"outcomes":[`+strings.Join(outcomes[:n-1], ",")+`]}`).must(t, 200, nil)
		if got := w.claimAll(t, "fan", 10); len(got) != 0 {
			t.Fatalf("claimed %v with one part still running", refsOf(got))
		}
		w.do("POST", "/api/v1/worker/outcomes", `{"outcomes":[`+last+`]}`).must(t, 200, nil)
		join := w.claimAll(t, "fan", 10)
		if !slices.Equal(refsOf(join), []string{"join"}) || len(join["join"].Inputs) != n {
			t.Fatalf("claimed %v with %d inputs, want join with %d", refsOf(join), len(join["join"].Inputs), n)
		}
		sum := 0
		for ref, in := range join["join"].Inputs {
			var r struct{ I int }
			if err := json.Unmarshal(in.Result, &r); err != nil || ref != fmt.Sprintf("part-%d", r.I) {
				t.Fatalf("input %s = %s", ref, in.Result)
			}
			sum += r.I
		}
		if sum != n*(n-1)/2 {
			t.Fatalf("sum of the parts' results %d, want %d", sum, n*(n-1)/2)
		}
	})
}
