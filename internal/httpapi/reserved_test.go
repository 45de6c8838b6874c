package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

const reservedSecret = "reserved-admin-secret"

// newKeyOf creates an API key of scopes (a JSON array) with the admin
// secret and returns it.
func (s *testServer) newKeyOf(t *testing.T, scopes string) string {
	t.Helper()
	var k api.Key
	s.do("POST", "/api/v1/keys", fmt.Sprintf(`{"name":"k","scopes":%s}`, scopes)).must(t, http.StatusCreated, &k)
	return k.Key
}

// reservedSubmissions are submissions that name what only jobd inserts,
// each with the field its refusal names.
var reservedSubmissions = []struct{ body, field string }{
	{`{"queue":"jobd.webhooks","kind":"jobd.webhook","args":{"subscription":"w1","payload":{}}}`, "queue"},
	{`{"queue":"jobd.anything","kind":"k"}`, "queue"},
	{`{"queue":"gateway","kind":"k"}`, "queue"},
	{`{"queue":"processes","kind":"k"}`, "queue"},
	{`{"kind":"jobd.webhook"}`, "kind"},
	{`{"kind":"gateway.request"}`, "kind"},
	{`{"kind":"process.task"}`, "kind"},
	{`{"kind":"process.timeout"}`, "kind"},
	{`{"kind":"k","idempotency_key":"schedule:nightly:2031-03-04T05:00:00Z"}`, "idempotency_key"},
	{`{"kind":"k","idempotency_key":"process:c/p:pay-1"}`, "idempotency_key"},
	{`{"kind":"k","idempotency_key":"gateway:dup"}`, "idempotency_key"},
	{`{"kind":"k","idempotency_key":"jobd:later"}`, "idempotency_key"},
	{`{"kind":"k","lock_key":"process:c/p"}`, "lock_key"},
	{`{"kind":"k","lock_key":"jobd:x"}`, "lock_key"},
}

// asTrigger is a submission as the dataloader's trigger body: task for
// kind.
func asTrigger(body string) string {
	var m map[string]any
	_ = json.Unmarshal([]byte(body), &m)
	m["task"] = m["kind"]
	delete(m, "kind")
	b, _ := json.Marshal(m)
	return string(b)
}

// TestReservedNamesRefused: no credential, the admin secret included,
// submits, triggers, schedules or re-runs with new args a job in a queue,
// of a kind or with a key jobd keeps for its own jobs: each is 422
// naming the field, and nothing is written.
func TestReservedNamesRefused(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: reservedSecret})
		creds := map[string]string{"submit key": s.newKeyOf(t, `["submit"]`), "admin key": s.newKeyOf(t, `["admin"]`),
			"admin secret": reservedSecret}
		for who, cred := range creds {
			auth := "Authorization: Bearer " + cred
			for _, c := range reservedSubmissions {
				p := s.do("POST", "/api/v1/jobs", c.body, auth).problem(t, 422, c.field)
				if p.Type != api.ProblemValidation {
					t.Errorf("%s submits %s: type %s", who, c.body, p.Type)
				}
				field := c.field
				if field == "kind" {
					field = "task" // as the trigger's body names it
				}
				s.do("POST", "/api/v1/jobs/trigger", asTrigger(c.body), auth).problem(t, 422, field)
			}
		}
		if n := countJobs(t, st); n != 0 {
			t.Fatalf("%d jobs stored by refused submissions", n)
		}

		// Schedules: a template names the field as the schedule API does.
		for _, c := range reservedSubmissions {
			if c.field == "idempotency_key" {
				continue // a template has no idempotency key
			}
			var tmpl map[string]any
			_ = json.Unmarshal([]byte(c.body), &tmpl)
			body, _ := json.Marshal(map[string]any{"cron": "@every 1s", "job": tmpl})
			s.do("PUT", "/api/v1/schedules/evil", string(body)).problem(t, 422, "job."+c.field)
		}
		s.do("GET", "/api/v1/schedules/evil", "").problem(t, http.StatusNotFound, "")

		// A re-run of one of jobd's own jobs: without new args, the
		// operator's to ask for; with new args, refused.
		res, err := st.JobInsertMany(context.Background(), []job.InsertParams{
			{Queue: "jobd.webhooks", Kind: "jobd.webhook", Args: json.RawMessage(`{"subscription":"w1"}`)},
			{Queue: "processes", Kind: "process.task", Args: json.RawMessage(`{"namespace":"c","id":"p"}`)},
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			finish(t, st, claim(t, st, r.Job.Queue), store.OutcomeSucceeded, `{}`, "")
			path := "/api/v1/jobs/" + r.Job.ID.String() + "/rerun"
			s.do("POST", path, `{"args":{"subscription":"w2","payload":{"forged":true}}}`).problem(t, 422, "args")
			after, err := st.JobGet(context.Background(), r.Job.ID)
			if err != nil || after.State != job.StateSucceeded || !jsonSame(after.Args, string(r.Job.Args)) {
				t.Fatalf("refused rerun of %s changed it: %+v, %v", r.Job.Queue, after, err)
			}
			var j api.Job
			s.do("POST", path, "").must(t, http.StatusOK, &j)
			if j.State != api.StateQueued || !jsonSame(j.Args, string(r.Job.Args)) {
				t.Fatalf("rerun without args of %s: %+v", r.Job.Queue, j)
			}
		}

		// Names that only look alike are a caller's.
		for _, body := range []string{`{"queue":"jobd","kind":"k"}`, `{"queue":"gateways","kind":"gateway.requests"}`,
			`{"kind":"k","idempotency_key":"scheduled:x"}`, `{"kind":"k","lock_key":"processes:x"}`} {
			s.do("POST", "/api/v1/jobs", body).must(t, http.StatusCreated, nil)
		}
	})
}

// TestIdempotencyMismatchHTTP: a key sent again with the same request,
// however spelled, answers 200 with its job; with another request (args,
// queue, kind, priority, run_at), 422 idempotency-mismatch naming
// idempotency_key, saying nothing of the job, and nothing is written.
func TestIdempotencyMismatchHTTP(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{})
		first := s.submit(t, `{"queue":"billing","kind":"charge","args":{"order":42,"eur":10},"requires":["pci","eu"],"idempotency_key":"order-42"}`, 201)
		for _, same := range []string{
			`{"queue":"billing","kind":"charge","args":{"order":42,"eur":10},"requires":["pci","eu"],"idempotency_key":"order-42"}`,
			`{"idempotency_key":"order-42","args":{"eur":10,"order":42},"kind":"charge","queue":"billing","priority":100,"max_attempts":5,"lease_ttl":"1m","requires":["eu","pci"]}`,
		} {
			if again := s.submit(t, same, 200); again.ID != first.ID {
				t.Fatalf("the same request answered job %s, want %s", again.ID, first.ID)
			}
		}
		var trig api.TriggerResponse
		s.do("POST", "/api/v1/jobs/trigger", `{"queue":"billing","task":"charge","args":{"order":42,"eur":10},"idempotency_key":"order-42"}`).problem(t, 422, "idempotency_key")
		for _, other := range []string{
			`{"queue":"billing","kind":"charge","args":{"order":43,"eur":10},"requires":["pci","eu"],"idempotency_key":"order-42"}`,
			`{"queue":"default","kind":"charge","args":{"order":42,"eur":10},"requires":["pci","eu"],"idempotency_key":"order-42"}`,
			`{"queue":"billing","kind":"refund","args":{"order":42,"eur":10},"requires":["pci","eu"],"idempotency_key":"order-42"}`,
			`{"queue":"billing","kind":"charge","args":{"order":42,"eur":10},"requires":["pci","eu"],"priority":1,"idempotency_key":"order-42"}`,
			`{"queue":"billing","kind":"charge","args":{"order":42,"eur":10},"requires":["pci","eu"],"run_at":"2020-01-01T00:00:00Z","idempotency_key":"order-42"}`,
		} {
			r := s.do("POST", "/api/v1/jobs", other)
			p := r.problem(t, 422, "idempotency_key")
			if p.Type != api.ProblemIdempotencyMismatch {
				t.Fatalf("%s: type %s, want %s", other, p.Type, api.ProblemIdempotencyMismatch)
			}
			if strings.Contains(string(r.body), first.ID.String()) || strings.Contains(string(r.body), `"state"`) {
				t.Fatalf("the mismatch answer tells of the job: %s", r.body)
			}
		}
		if n := countJobs(t, st); n != 1 {
			t.Fatalf("%d jobs, want 1", n)
		}

		// The dataloader's trigger keeps the rule: its own key, its own job.
		s.do("POST", "/api/v1/jobs/trigger", `{"task":"load","args":{"day":1},"idempotency_key":"load-1"}`).must(t, http.StatusCreated, &trig)
		var again api.TriggerResponse
		s.do("POST", "/api/v1/jobs/trigger", `{"kind":"load","args":{"day":1},"idempotency_key":"load-1"}`).must(t, http.StatusOK, &again)
		if again.JobID != trig.JobID {
			t.Fatalf("trigger replay answered %s, want %s", again.JobID, trig.JobID)
		}
		p := s.do("POST", "/api/v1/jobs/trigger", `{"task":"load","args":{"day":2},"idempotency_key":"load-1"}`).problem(t, 422, "idempotency_key")
		if p.Type != api.ProblemIdempotencyMismatch {
			t.Fatalf("trigger mismatch: type %s", p.Type)
		}
	})
}

// TestReplayWithoutRead: a submission that matches an existing job
// answers a credential without the read scope with the job's id and
// state only, never its args, result, error, progress or checkpoint; a
// credential with read, the admin secret and an open server get it all.
// A new job (201) answers in full to all.
func TestReplayWithoutRead(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: reservedSecret})
		submitOnly := "Authorization: Bearer " + s.newKeyOf(t, `["submit"]`)
		submitRead := "Authorization: Bearer " + s.newKeyOf(t, `["submit","read"]`)
		body := `{"queue":"mail","kind":"send","args":{"to":"ceo@example.com"},"idempotency_key":"mail-1"}`
		twin := `{"queue":"mail","kind":"send","args":{"to":"cfo@example.com"},"unique":"active"}`

		var created api.Job
		s.do("POST", "/api/v1/jobs", body, submitOnly).must(t, http.StatusCreated, &created)
		if !jsonSame(created.Args, `{"to":"ceo@example.com"}`) {
			t.Fatalf("the new job's answer: %+v", created)
		}
		var twinJob api.Job
		s.do("POST", "/api/v1/jobs", twin, submitOnly).must(t, http.StatusCreated, &twinJob)
		j := claim(t, st, "mail")
		setProgress(t, st, j, job.Progress{Phase: "smtp", Done: 1, Total: 2, Items: json.RawMessage(`["ceo"]`)})
		finish(t, st, j, store.OutcomeSucceeded, `{"message_id":"secret-id"}`, "")

		for what, c := range map[string]struct{ body, id string }{
			"idempotency key": {body, created.ID.String()}, "active duplicate": {twin, twinJob.ID.String()},
		} {
			r := s.do("POST", "/api/v1/jobs", c.body, submitOnly).must(t, http.StatusOK, nil)
			var members map[string]json.RawMessage
			if err := json.Unmarshal(r.body, &members); err != nil {
				t.Fatal(err)
			}
			names := make([]string, 0, len(members))
			for n := range members {
				names = append(names, n)
			}
			slices.Sort(names)
			var replay api.JobReplay
			_ = json.Unmarshal(r.body, &replay)
			if !slices.Equal(names, []string{"id", "state"}) || replay.ID.String() != c.id || replay.State == "" {
				t.Fatalf("%s replayed to a submit-only key: %s, want only its id %s and state", what, r.body, c.id)
			}
			for _, cred := range []string{submitRead, "Authorization: Bearer " + reservedSecret} {
				var full api.Job
				s.do("POST", "/api/v1/jobs", c.body, cred).must(t, http.StatusOK, &full)
				if full.ID.String() != c.id || full.Kind != "send" || len(full.Args) == 0 {
					t.Fatalf("%s replayed to a reader: %+v", what, full)
				}
			}
		}
		var full api.Job
		s.do("POST", "/api/v1/jobs", body, submitRead).must(t, http.StatusOK, &full)
		if !jsonSame(full.Result, `{"message_id":"secret-id"}`) || full.Progress.Phase != "smtp" {
			t.Fatalf("a reader's replay: %+v", full)
		}

		// The dataloader's answer is the job's id and state for everyone.
		var trig map[string]json.RawMessage
		s.do("POST", "/api/v1/jobs/trigger", `{"queue":"mail","task":"send","args":{"to":"ceo@example.com"},"idempotency_key":"mail-1"}`, submitOnly).
			must(t, http.StatusOK, &trig)
		if len(trig) != 2 || trig["job_id"] == nil || trig["status"] == nil {
			t.Fatalf("trigger replay: %v", trig)
		}

		// With authentication off, every caller reads everything.
		open := newServer(t, st, httpapi.Config{})
		open.do("POST", "/api/v1/jobs", body).must(t, http.StatusOK, &full)
		if !jsonSame(full.Result, `{"message_id":"secret-id"}`) {
			t.Fatalf("an open server's replay: %+v", full)
		}
	})
}

// TestProcessKeyNamespace: a process call's Idempotency-Key lives in the
// process's own namespace of keys ("process:NS/ID:KEY"), which no job
// submitter may use: a job with the caller's key is a job of its own, a
// job naming the process's key or its lock is refused, and the call's
// key sent again with another request is 422 idempotency-mismatch.
func TestProcessKeyNamespace(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		srv := processServer(t, st, nil)
		srv.do("POST", "/api/v1/processes/c/p", `{"args":{}}`).must(t, http.StatusCreated, nil)
		var call taskAnswer
		srv.do("POST", "/api/v1/processes/c/p/call", `{"args":{"by":1}}`, "Idempotency-Key: pay-1").must(t, http.StatusOK, &call)

		own := srv.submit(t, `{"kind":"k","idempotency_key":"pay-1"}`, http.StatusCreated)
		if own.ID.String() == call.TaskID {
			t.Fatal("a job submitted with the call's key is the call's task")
		}
		srv.do("POST", "/api/v1/jobs", `{"kind":"k","idempotency_key":"process:c/p:pay-1"}`).problem(t, 422, "idempotency_key")
		srv.do("POST", "/api/v1/jobs", `{"kind":"k","lock_key":"process:c/p"}`).problem(t, 422, "lock_key")

		var again taskAnswer
		srv.do("POST", "/api/v1/processes/c/p/call", `{"args":{"by":1}}`, "Idempotency-Key: pay-1").must(t, http.StatusOK, &again)
		if again.TaskID != call.TaskID {
			t.Fatalf("the call sent again answered task %s, want %s", again.TaskID, call.TaskID)
		}
		for _, other := range []struct{ path, body string }{
			{"/api/v1/processes/c/p/call", `{"args":{"by":2}}`},
			{"/api/v1/processes/c/p/repair", `{"args":{"by":1}}`},
		} {
			p := srv.do("POST", other.path, other.body, "Idempotency-Key: pay-1").problem(t, 422, "Idempotency-Key")
			if p.Type != api.ProblemIdempotencyMismatch || strings.Contains(p.Detail, call.TaskID) {
				t.Fatalf("%s with the key of another call: %+v", other.path, p)
			}
		}
		// Two jobs: the process's init and its call, plus the caller's own.
		if n := countJobs(t, st); n != 3 {
			t.Fatalf("%d jobs, want 3", n)
		}
	})
}
