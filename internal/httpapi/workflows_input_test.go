package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/store"
)

// countWorkflows is the number of workflows in the store.
func countWorkflows(t *testing.T, st store.Store) int64 {
	t.Helper()
	res, err := st.WorkflowList(context.Background(), store.WorkflowListParams{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Total
}

// TestWorkflowBadInput: every refusal of POST /api/v1/workflows is a
// problem naming the member at fault, a task's as tasks[i].member (its
// job's members read and checked exactly as POST /api/v1/jobs reads
// one), and writes nothing: no workflow, no job.
func TestWorkflowBadInput(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret, WorkflowMaxTasks: 3})
		task := func(members string) string { return `{"ref":"a","kind":"k"` + members + `}` }
		wf := func(tasks ...string) string { return `{"name":"w","tasks":[` + strings.Join(tasks, ",") + `]}` }
		for _, c := range []struct {
			body   string
			status int
			field  string
		}{
			{`{"tasks":[` + task("") + `]}`, 422, "name"},
			{`{"name":"w","tasks":[]}`, 422, "tasks"},
			{`{"name":"w"}`, 422, "tasks"},
			{`{"name":"w","tasks":[` + task("") + `],"extra":1}`, 400, "extra"},
			{`{"name":"w\u0000","tasks":[` + task("") + `]}`, 422, "name"},
			{wf(`{"ref":"a"}`), 422, "tasks[0].kind"},
			{wf(task(""), `{"ref":"b","kind":"k","color":"red"}`), 400, "tasks[1].color"},
			{wf(task(`,"timeout":"0.5s"`)), 422, "tasks[0].timeout"},
			{wf(task(`,"timeout":"soon"`)), 400, "tasks[0].timeout"},
			{wf(task(`,"run_at":"tomorrow"`)), 400, "tasks[0].run_at"},
			{wf(task(`,"max_attempts":0`)), 422, "tasks[0].max_attempts"},
			{wf(task(`,"args":[1]`)), 422, "tasks[0].args"},
			{wf(task(`,"queue":"jobd.webhooks"`)), 422, "tasks[0].queue"},
			{wf(task(`,"lock_key":"jobd:x"`)), 422, "tasks[0].lock_key"},
			{wf(task(`,"idempotency_key":"k1"`)), 422, "tasks[0].idempotency_key"},
			{wf(task(`,"unique":"active"`)), 422, "tasks[0].unique"},
			{wf(task(`,"run_on":"sometimes"`)), 422, "tasks[0].run_on"},
			{wf(`{"kind":"k"}`), 422, "tasks[0].ref"},
			{wf(task(""), task("")), 422, "tasks[1].ref"},
			{wf(task(`,"depends_on":["ghost"]`)), 422, "tasks[0].depends_on"},
			{wf(task(`,"depends_on":["a"]`)), 422, "tasks[0].depends_on"},
			{wf(task(""), `{"ref":"b","kind":"k","depends_on":["a","a"]}`), 422, "tasks[1].depends_on"},
			{wf(`{"ref":"a","kind":"k","depends_on":["c"]}`, `{"ref":"b","kind":"k","depends_on":["a"]}`, `{"ref":"c","kind":"k","depends_on":["b"]}`), 422, "tasks[0].depends_on"},
			{wf(task(""), `{"ref":"b","kind":"k"}`, `{"ref":"c","kind":"k"}`, `{"ref":"d","kind":"k"}`), 422, "tasks[3]"},
			{`{"name":"w","idempotency_key":"jobd:k","tasks":[` + task("") + `]}`, 422, "idempotency_key"},
			{`{"name":"w","idempotency_key":"` + strings.Repeat("k", 300) + `","tasks":[` + task("") + `]}`, 422, "idempotency_key"},
		} {
			p := s.do("POST", "/api/v1/workflows", c.body).problem(t, c.status, c.field)
			if c.status == 422 && p.Type != api.ProblemValidation {
				t.Fatalf("%s: type %s", c.body, p.Type)
			}
		}
		if n, m := countWorkflows(t, st), countJobs(t, st); n != 0 || m != 0 {
			t.Fatalf("%d workflows and %d jobs after the refusals, want none", n, m)
		}
		s.submitWorkflow(t, wf(task(""), `{"ref":"b","kind":"k"}`, `{"ref":"c","kind":"k"}`), 201)
	})
}

// TestWorkflowIdempotency: the same idempotency key and request (its
// tasks in another order) is 200 with the first workflow, in full to a
// credential that reads and only its id and state to one that only
// submits; the key with another request is 422 idempotency-mismatch
// naming idempotency_key, and nothing is written.
func TestWorkflowIdempotency(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		first := s.submitWorkflow(t, `{"name":"w","idempotency_key":"once","tasks":[{"ref":"a","kind":"k"},{"ref":"b","kind":"k","depends_on":["a"]}]}`, 201)
		again := s.submitWorkflow(t, `{"name":"w","idempotency_key":"once","tasks":[{"ref":"b","kind":"k","depends_on":["a"]},{"ref":"a","kind":"k","queue":"default"}]}`, 200)
		if again.ID != first.ID || len(again.Tasks) != 2 {
			t.Fatalf("replay %+v, want workflow %s in full", again, first.ID)
		}
		submitter := s.newKeyOf(t, `["submit"]`)
		r := s.do("POST", "/api/v1/workflows", `{"name":"w","idempotency_key":"once","tasks":[{"ref":"a","kind":"k"},{"ref":"b","kind":"k","depends_on":["a"]}]}`, "Authorization: Bearer "+submitter)
		var members map[string]json.RawMessage
		r.must(t, 200, &members)
		if len(members) != 2 || string(members["id"]) != `"`+first.ID.String()+`"` || string(members["state"]) != `"running"` {
			t.Fatalf("replay to a submitter: %s", r.body)
		}
		for _, body := range []string{
			`{"name":"w","idempotency_key":"once","tasks":[{"ref":"a","kind":"k","args":{"n":2}},{"ref":"b","kind":"k","depends_on":["a"]}]}`,
			`{"name":"w","idempotency_key":"once","tasks":[{"ref":"a","kind":"k"},{"ref":"b","kind":"k"}]}`,
			`{"name":"v","idempotency_key":"once","tasks":[{"ref":"a","kind":"k"},{"ref":"b","kind":"k","depends_on":["a"]}]}`,
		} {
			p := s.do("POST", "/api/v1/workflows", body).problem(t, 422, "idempotency_key")
			if p.Type != api.ProblemIdempotencyMismatch {
				t.Fatalf("%s: %s", body, p.Type)
			}
		}
		if n, m := countWorkflows(t, st), countJobs(t, st); n != 1 || m != 2 {
			t.Fatalf("%d workflows and %d jobs, want 1 and 2", n, m)
		}
	})
}

// TestWorkflowScopesAndQueueLimits: submit needs scope submit, reads
// read, cancel cancel, retry admin (403 otherwise); a key limited to
// video.* submits a workflow only when every task is in its queues (403
// naming tasks[i].queue, nothing written), sees only such workflows (a
// workflow with one task elsewhere is 404 on read and cancel, and left
// out of the list, whose total is -1).
func TestWorkflowScopesAndQueueLimits(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		mixed := s.submitWorkflow(t, `{"name":"mixed","tasks":[{"ref":"a","kind":"k","queue":"video.hd"},{"ref":"b","kind":"k","queue":"audio","depends_on":["a"]}]}`, 201)
		reader, submitter := s.newKeyOf(t, `["read"]`), s.newKeyOf(t, `["submit"]`)
		canceler := s.newKeyOf(t, `["cancel"]`)
		body := `{"name":"v","tasks":[{"ref":"a","kind":"k","queue":"video.hd"},{"ref":"b","kind":"k","queue":"video.sd","depends_on":["a"]}]}`
		bearer := func(k string) string { return "Authorization: Bearer " + k }
		s.do("POST", "/api/v1/workflows", body, bearer(reader)).problem(t, 403, "")
		s.do("GET", "/api/v1/workflows", "", bearer(submitter)).problem(t, 403, "")
		s.do("GET", "/api/v1/workflows/"+mixed.ID.String(), "", bearer(submitter)).problem(t, 403, "")
		s.do("POST", "/api/v1/workflows/"+mixed.ID.String()+"/cancel", "", bearer(reader)).problem(t, 403, "")
		s.do("POST", "/api/v1/workflows/"+mixed.ID.String()+"/retry", "", bearer(canceler)).problem(t, 403, "")
		s.do("GET", "/api/v1/workflows/"+mixed.ID.String(), "", bearer(reader)).must(t, 200, nil)

		limited := s.limitedKey(t, `["submit","read","cancel"]`, `["video.*"]`).Key
		s.do("POST", "/api/v1/workflows", `{"name":"v","tasks":[{"ref":"a","kind":"k","queue":"video.hd"},{"ref":"b","kind":"k","queue":"audio"}]}`, bearer(limited)).problem(t, 403, "tasks[1].queue")
		s.do("POST", "/api/v1/workflows", `{"name":"v","tasks":[{"ref":"a","kind":"k"}]}`, bearer(limited)).problem(t, 403, "tasks[0].queue")
		if n := countWorkflows(t, st); n != 1 {
			t.Fatalf("%d workflows after the refusals, want 1", n)
		}
		var own api.Workflow
		s.do("POST", "/api/v1/workflows", body, bearer(limited)).must(t, 201, &own)
		s.do("GET", "/api/v1/workflows/"+own.ID.String(), "", bearer(limited)).must(t, 200, nil)
		s.do("GET", "/api/v1/workflows/"+mixed.ID.String(), "", bearer(limited)).problem(t, 404, "")
		s.do("POST", "/api/v1/workflows/"+mixed.ID.String()+"/cancel", "", bearer(limited)).problem(t, 404, "")
		var list api.WorkflowList
		r := s.do("GET", "/api/v1/workflows", "", bearer(limited)).must(t, 200, &list)
		if len(list.Workflows) != 1 || list.Workflows[0].ID != own.ID || list.Total != -1 || r.header.Get("X-Total-Count") != "-1" {
			t.Fatalf("a limited key's list %+v", list)
		}
		s.do("POST", "/api/v1/workflows/"+own.ID.String()+"/cancel", "", bearer(limited)).must(t, 200, nil)
		if mixedNow := s.getWorkflow(t, mixed.ID); mixedNow.State != api.WorkflowRunning {
			t.Fatalf("the mixed workflow is %s", mixedNow.State)
		}
	})
}

// TestWorkflowList: newest first, filtered by name and state, paged by
// cursor with a total of the matches; an unknown state or a bad cursor
// is 400 naming it, a limit over 200 is 422.
func TestWorkflowList(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		var ids []string
		for i, name := range []string{"a", "b", "a"} {
			// Refs unique across the workflows: runAll claims by ref.
			ref := fmt.Sprintf("t%d", i)
			ids = append(ids, s.submitWorkflow(t, `{"name":"`+name+`","tasks":[{"ref":"`+ref+`","kind":"k","queue":"l"}]}`, 201).ID.String())
		}
		var page api.WorkflowList
		r := s.do("GET", "/api/v1/workflows?name=a&limit=1", "").must(t, 200, &page)
		if len(page.Workflows) != 1 || page.Workflows[0].ID.String() != ids[2] || page.Total != 2 || page.NextCursor == "" || r.header.Get("X-Total-Count") != "2" {
			t.Fatalf("first page %+v", page)
		}
		var next api.WorkflowList
		s.do("GET", "/api/v1/workflows?name=a&limit=1&cursor="+page.NextCursor, "").must(t, 200, &next)
		if len(next.Workflows) != 1 || next.Workflows[0].ID.String() != ids[0] || next.NextCursor != "" {
			t.Fatalf("second page %+v", next)
		}
		w := s.registerWorker(t, "w1")
		w.runAll(t, "l")
		s.do("GET", "/api/v1/workflows?state=running", "").must(t, 200, &page)
		if len(page.Workflows) != 0 || page.Total != 0 {
			t.Fatalf("running: %+v", page)
		}
		s.do("GET", "/api/v1/workflows?state=succeeded,failed", "").must(t, 200, &page)
		if len(page.Workflows) != 3 || page.Workflows[0].Succeeded != 1 || page.Workflows[0].Tasks != nil {
			t.Fatalf("succeeded: %+v", page)
		}
		s.do("GET", "/api/v1/workflows?state=done", "").problem(t, 400, "state")
		s.do("GET", "/api/v1/workflows?cursor=zzz", "").problem(t, 400, "cursor")
		s.do("GET", "/api/v1/workflows?limit=500", "").problem(t, 422, "limit")
		s.do("GET", "/api/v1/workflows?queue=x", "").problem(t, 400, "queue")
	})
}
