package httpapi_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/store"
)

// branches is A → B → C, A → D, B → E (run_on any), and X → Y apart,
// every task of one attempt.
const branches = `{"name":"branches","tasks":[
	{"ref":"A","kind":"k","queue":"br","max_attempts":1},
	{"ref":"B","kind":"k","queue":"br","max_attempts":1,"depends_on":["A"]},
	{"ref":"C","kind":"k","queue":"br","max_attempts":1,"depends_on":["B"]},
	{"ref":"D","kind":"k","queue":"br","max_attempts":1,"depends_on":["A"]},
	{"ref":"E","kind":"k","queue":"br","max_attempts":1,"depends_on":["B"],"run_on":"any"},
	{"ref":"X","kind":"k","queue":"br","max_attempts":1},
	{"ref":"Y","kind":"k","queue":"br","max_attempts":1,"depends_on":["X"]}]}`

// runAll completes every claimable task of queue until none is left,
// failing those named in fail; it returns the refs it ran, in order.
func (w *remoteWorker) runAll(t *testing.T, queue string, fail ...string) []string {
	t.Helper()
	var ran []string
	for {
		got := w.claimAll(t, queue, 100)
		if len(got) == 0 {
			return ran
		}
		for _, ref := range refsOf(got) {
			ran = append(ran, ref)
			if slices.Contains(fail, ref) {
				w.outcome(got[ref], "fail", `,"error":"`+ref+` broke"`).must(t, 200, nil)
				continue
			}
			w.outcome(got[ref], "complete", `,"result":"`+ref+`"`).must(t, 200, nil)
		}
	}
}

// TestWorkflowFailureAndRetry: B's failure cancels exactly its
// descendants that run on success (C), names B in C's error and
// canceled_by, and leaves the other branches (D, X → Y) to run; E, which
// runs on any, runs after the failure and sees B's state and error in
// its inputs. The workflow ends failed, and its journal says so; a
// workflow.finished event is in the outbox. Retrying B alone
// (POST /api/v1/jobs/{id}/retry) resumes the workflow: B and then C run,
// nothing that succeeded runs again, and it ends succeeded.
func TestWorkflowFailureAndRetry(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		w := s.registerWorker(t, "w1")
		wf := s.submitWorkflow(t, branches, 201)

		var inputsE map[string]api.Input
		ran := []string{}
		for {
			got := w.claimAll(t, "br", 100)
			if len(got) == 0 {
				break
			}
			for _, ref := range refsOf(got) {
				ran = append(ran, ref)
				switch ref {
				case "B":
					w.outcome(got[ref], "fail", `,"error":"B broke"`).must(t, 200, nil)
				case "E":
					inputsE = got[ref].Inputs
					fallthrough
				default:
					w.outcome(got[ref], "complete", `,"result":"`+ref+`"`).must(t, 200, nil)
				}
			}
		}
		slices.Sort(ran)
		if !slices.Equal(ran, []string{"A", "B", "D", "E", "X", "Y"}) {
			t.Fatalf("ran %v, want every task but C", ran)
		}
		if b := inputsE["B"]; len(inputsE) != 1 || b.State != api.StateFailed || b.Error != "B broke" || (b.Result != nil && string(b.Result) != "null") {
			t.Fatalf("E's inputs %+v, want B failed with its error", inputsE)
		}
		wf = s.getWorkflow(t, wf.ID)
		c := taskOf(t, wf, "C")
		if c.State != api.StateCanceled || c.CanceledBy != "B" || !strings.Contains(c.Error, `"B"`) {
			t.Fatalf("C %+v, want canceled by B", c)
		}
		if wf.State != api.WorkflowFailed || wf.Failed != 1 || wf.Canceled != 1 || wf.Succeeded != 5 || wf.Events[len(wf.Events)-1].Kind != "failed" {
			t.Fatalf("workflow %+v", wf)
		}

		var retried api.Job
		s.do("POST", "/api/v1/jobs/"+taskOf(t, wf, "C").ID.String()+"/retry", "").problem(t, 409, "")
		s.do("POST", "/api/v1/jobs/"+taskOf(t, wf, "B").ID.String()+"/retry", "").must(t, 200, &retried)
		if retried.State != api.StateQueued || retried.Ref != "B" {
			t.Fatalf("B retried: %s", retried.State)
		}
		if wf = s.getWorkflow(t, wf.ID); wf.State != api.WorkflowRunning || taskOf(t, wf, "C").State != api.StateWaiting {
			t.Fatalf("after B's retry: workflow %s, C %s", wf.State, taskOf(t, wf, "C").State)
		}
		if ran := w.runAll(t, "br"); !slices.Equal(ran, []string{"B", "C"}) {
			t.Fatalf("after the retry ran %v, want B then C", ran)
		}
		wf = s.getWorkflow(t, wf.ID)
		if wf.State != api.WorkflowSucceeded || wf.Events[len(wf.Events)-1].Kind != "succeeded" {
			t.Fatalf("workflow %s, journal %+v", wf.State, wf.Events)
		}
	})
}

// TestWorkflowRetryAndCancel: POST /api/v1/workflows/{id}/retry (admin)
// retries every failed task and restores what it canceled, without
// re-running what succeeded; a workflow with nothing to retry is 409.
// POST /api/v1/workflows/{id}/cancel cancels the waiting and queued
// tasks at once and asks the running one to stop (cancel_requested); a
// second cancel of the final workflow is 409; an unknown id is 404.
func TestWorkflowRetryAndCancel(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		w := s.registerWorker(t, "w1")
		chain := `{"name":"chain","tasks":[{"ref":"A","kind":"k","queue":"ch"},
			{"ref":"B","kind":"k","queue":"ch","max_attempts":1,"depends_on":["A"]},
			{"ref":"C","kind":"k","queue":"ch","depends_on":["B"]}]}`
		wf := s.submitWorkflow(t, chain, 201)
		s.do("POST", "/api/v1/workflows/"+wf.ID.String()+"/retry", "").problem(t, 409, "")
		if ran := w.runAll(t, "ch", "B"); !slices.Equal(ran, []string{"A", "B"}) {
			t.Fatalf("ran %v", ran)
		}
		var row api.Workflow
		s.do("POST", "/api/v1/workflows/"+wf.ID.String()+"/retry", "").must(t, 200, &row)
		if row.State != api.WorkflowRunning || row.Tasks != nil {
			t.Fatalf("retried: %+v", row)
		}
		if ran := w.runAll(t, "ch"); !slices.Equal(ran, []string{"B", "C"}) {
			t.Fatalf("after the workflow's retry ran %v, want B then C", ran)
		}
		wf = s.getWorkflow(t, wf.ID)
		if wf.State != api.WorkflowSucceeded || taskOf(t, wf, "A").Attempt != 1 {
			t.Fatalf("workflow %s, A's attempts %d", wf.State, taskOf(t, wf, "A").Attempt)
		}
		kinds := []string{}
		for _, e := range wf.Events {
			kinds = append(kinds, e.Kind)
		}
		if !slices.Equal(kinds, []string{"submitted", "failed", "retried", "succeeded"}) {
			t.Fatalf("journal %v", kinds)
		}

		wf = s.submitWorkflow(t, chain, 201)
		a := w.claimAll(t, "ch", 1)["A"]
		s.do("POST", "/api/v1/workflows/"+wf.ID.String()+"/cancel", "").must(t, 200, &row)
		wf = s.getWorkflow(t, wf.ID)
		if taskOf(t, wf, "B").State != api.StateCanceled || taskOf(t, wf, "C").State != api.StateCanceled {
			t.Fatalf("after the cancel: %+v", wf.Tasks)
		}
		var job api.Job
		s.do("GET", "/api/v1/jobs/"+a.ID.String(), "").must(t, 200, &job)
		if job.State != api.StateRunning || !job.CancelRequested || wf.State != api.WorkflowRunning {
			t.Fatalf("A %s cancel_requested %v, workflow %s", job.State, job.CancelRequested, wf.State)
		}
		w.outcome(a, "fail", `,"error":"stopped"`).must(t, 200, nil)
		if wf = s.getWorkflow(t, wf.ID); !wf.State.Final() {
			t.Fatalf("workflow %s after its running task ended", wf.State)
		}
		s.do("POST", "/api/v1/workflows/"+wf.ID.String()+"/cancel", "").problem(t, 409, "")
		s.do("POST", "/api/v1/workflows/0190f5a0-0000-7000-8000-000000000000/cancel", "").problem(t, 404, "")
		s.do("GET", "/api/v1/workflows/0190f5a0-0000-7000-8000-000000000000", "").problem(t, 404, "")
		s.do("GET", "/api/v1/workflows/nope", "").problem(t, 400, "id")
	})
}
