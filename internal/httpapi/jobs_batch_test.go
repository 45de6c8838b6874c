package httpapi_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/store"
)

// batch posts jobs (JSON objects) to POST /api/v1/jobs/batch, with hdr.
func (s *testServer) batch(jobs []string, hdr ...string) *response {
	s.t.Helper()
	return s.do("POST", "/api/v1/jobs/batch", `{"jobs":[`+strings.Join(jobs, ",")+`]}`, hdr...)
}

// refusal checks that r refuses a batch whole: status, the first refused
// job's problem naming field ("jobs[1].kind"), every refused index in
// items, in order.
func (r *response) refusal(t *testing.T, status int, field string, indexes ...int) api.SubmitBatchProblem {
	t.Helper()
	r.problem(t, status, field)
	var doc api.SubmitBatchProblem
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, it := range doc.Items {
		got = append(got, it.Index)
		if it.Problem.Status == 0 || it.Problem.Type == "" {
			t.Errorf("item %d: problem %+v", it.Index, it.Problem)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(indexes) {
		t.Fatalf("refused items %v, want %v (%s)", got, indexes, r.body)
	}
	return doc
}

// TestSubmitBatch: up to 1000 jobs in one request, each answered in
// order: 201 with a new job's id and state, 200 with the job an
// idempotency key names; the jobs are those POST /api/v1/jobs would make.
func TestSubmitBatch(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{})
		existing := s.submit(t, `{"kind":"k","idempotency_key":"once"}`, 201)
		var res api.SubmitBatchResponse
		s.batch([]string{
			`{"kind":"a","queue":"q1","args":{"n":1},"lease_ttl":30}`,
			`{"kind":"k","idempotency_key":"once"}`,
			`{"kind":"b","priority":5,"timeout":"1m"}`,
			`{"kind":"c","idempotency_key":"twice"}`,
			`{"kind":"c","idempotency_key":"twice"}`,
		}, "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").must(t, 200, &res)
		want := []int{201, 200, 201, 201, 200}
		if len(res.Jobs) != len(want) {
			t.Fatalf("%d answers, want %d: %+v", len(res.Jobs), len(want), res)
		}
		for i, w := range want {
			if res.Jobs[i].Status != w || res.Jobs[i].State != api.StateQueued || res.Jobs[i].Problem != nil {
				t.Errorf("job %d: %+v, want %d queued", i, res.Jobs[i], w)
			}
		}
		if res.Jobs[1].ID != existing.ID || res.Jobs[4].ID != res.Jobs[3].ID {
			t.Errorf("idempotency keys matched %s and %s, want %s and %s", res.Jobs[1].ID, res.Jobs[4].ID, existing.ID, res.Jobs[3].ID)
		}
		var j api.Job
		s.do("GET", "/api/v1/jobs/"+res.Jobs[0].ID.String(), "").must(t, 200, &j)
		if j.Queue != "q1" || j.Kind != "a" || j.LeaseTTLSeconds != 30 || string(j.Args) != `{"n":1}` || j.TraceParent == "" {
			t.Errorf("the first job: %+v", j)
		}
		if n := countJobs(t, st); n != 4 {
			t.Errorf("%d jobs, want 4", n)
		}

		// 1000 jobs is the most.
		many := make([]string, 1000)
		for i := range many {
			many[i] = fmt.Sprintf(`{"kind":"bulk","args":{"i":%d}}`, i)
		}
		s.batch(many).must(t, 200, &res)
		if len(res.Jobs) != 1000 || res.Jobs[999].Status != 201 {
			t.Fatalf("1000 jobs: %d answers", len(res.Jobs))
		}
		s.batch(append(many, `{"kind":"bulk"}`)).problem(t, 422, "jobs")
		s.batch(nil).problem(t, 422, "jobs")
		s.do("POST", "/api/v1/jobs/batch", `{}`).problem(t, 422, "jobs")
		if n := countJobs(t, st); n != 1004 {
			t.Errorf("%d jobs, want 1004", n)
		}
	})
}

// TestSubmitBatchAllOrNothing: one job refused refuses the batch (its
// status, its problem naming "jobs[i].member", every refused job in
// items) and inserts none: a malformed job (400), a rule (422), jobd's
// own names (422, before the caller's queues), an idempotency key reused
// with another request (422 idempotency-mismatch), a queue the caller's
// key is not limited to (403).
func TestSubmitBatchAllOrNothing(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		s.submit(t, `{"kind":"k","idempotency_key":"taken"}`, 201)
		before := countJobs(t, st)
		ok := `{"kind":"fine"}`
		s.batch([]string{ok, `{"queue":"q"}`, ok, `{"kind":"k","priority":-1}`}).refusal(t, 422, "jobs[1].kind", 1, 3)
		s.batch([]string{`{"kind":"k","priority":"high"}`, ok}).refusal(t, 400, "jobs[0].priority", 0)
		s.batch([]string{ok, `{"kind":"k","surprise":1}`}).refusal(t, 400, "jobs[1].surprise", 1)
		s.batch([]string{ok, `{"kind":"k","queue":"jobd.webhooks"}`}).refusal(t, 422, "jobs[1].queue", 1)
		s.batch([]string{ok, `{"kind":"process.task"}`}).refusal(t, 422, "jobs[1].kind", 1)
		s.batch([]string{ok, `{"kind":"k","lease_ttl":0}`}).refusal(t, 422, "jobs[1].lease_ttl", 1)
		s.batch([]string{ok, `{"kind":"k","args":{"s":"\u0000"}}`}).refusal(t, 422, "jobs[1].args", 1)
		doc := s.batch([]string{ok, ok, `{"kind":"other","idempotency_key":"taken"}`}).refusal(t, 422, "jobs[2].idempotency_key", 2)
		if doc.Type != api.ProblemIdempotencyMismatch {
			t.Errorf("a reused key: %s, want idempotency-mismatch", doc.Type)
		}

		k := s.limitedKey(t, `["submit"]`, `["video.*"]`)
		auth := "Authorization: Bearer " + k.Key
		s.batch([]string{`{"kind":"k","queue":"video.hd"}`, `{"kind":"k","queue":"audio"}`}, auth).refusal(t, 403, "jobs[1].queue", 1)
		s.batch([]string{`{"kind":"k","queue":"video.hd"}`, `{"kind":"k","queue":"jobd.x"}`}, auth).refusal(t, 422, "jobs[1].queue", 1)
		if after := countJobs(t, st); after != before {
			t.Fatalf("refused batches inserted %d jobs", after-before)
		}

		// A key that names a job of a queue the caller cannot see is
		// refused as a reused key, saying nothing of that job.
		doc = s.batch([]string{`{"kind":"k","queue":"video.sd"}`, `{"kind":"k","queue":"video.sd","idempotency_key":"taken"}`}, auth).
			refusal(t, 422, "jobs[1].idempotency_key", 1)
		if doc.Type != api.ProblemIdempotencyMismatch || strings.Contains(doc.Detail, "default") {
			t.Fatalf("a key of a hidden job: %+v", doc)
		}
		if after := countJobs(t, st); after != before {
			t.Fatalf("refused batches inserted %d jobs", after-before)
		}
	})
}

// TestSubmitBatchScopes: the batch needs the submit scope, as one job
// does.
func TestSubmitBatchScopes(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		var k api.Key
		s.do("POST", "/api/v1/keys", `{"name":"reader","scopes":["read"]}`).must(t, 201, &k)
		s.batch([]string{`{"kind":"k"}`}, "Authorization: Bearer "+k.Key).problem(t, 403, "")
		s.batch([]string{`{"kind":"k"}`}, "Authorization: Bearer wrong").problem(t, 401, "")
		if n := countJobs(t, st); n != 0 {
			t.Fatalf("%d jobs", n)
		}
	})
}
