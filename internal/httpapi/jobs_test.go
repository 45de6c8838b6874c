package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/store"
)

func TestSubmitAndGet(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{})

		r := s.do("POST", "/api/v1/jobs", `{"kind":"email","args":{"to":"a@b.c","note":"<b>&</b>"},"lock_key":"L","partition_key":"P","lease_ttl":"90s"}`)
		var j api.Job
		r.must(t, 201, &j)
		if !strings.Contains(string(r.body), `"note":"<b>&</b>"`) {
			t.Errorf("args not given back as sent: %s", r.body)
		}
		if loc := r.header.Get("Location"); loc != "/api/v1/jobs/"+j.ID.String() {
			t.Errorf("Location %q", loc)
		}
		if j.Queue != "default" || j.Kind != "email" || j.State != api.StateQueued || j.Priority != 100 ||
			j.MaxAttempts != 5 || j.Attempt != 0 || j.LockKey != "L" || j.PartitionKey != "P" ||
			time.Duration(j.LeaseTTL) != 90*time.Second || j.CreatedAt.IsZero() || j.RunAt.IsZero() || j.UpdatedAt.IsZero() {
			t.Errorf("submitted job %+v", j)
		}
		var args map[string]string
		if err := json.Unmarshal(j.Args, &args); err != nil || args["to"] != "a@b.c" {
			t.Errorf("args %s", j.Args)
		}

		// Every field the issue lists is on the wire.
		var raw map[string]json.RawMessage
		s.do("GET", "/api/v1/jobs/"+j.ID.String(), "").must(t, 200, &raw)
		for _, f := range []string{"id", "queue", "kind", "args", "state", "priority", "attempt", "max_attempts", "run_at",
			"lock_key", "partition_key", "idempotency_key", "progress", "result", "error", "cancel_requested",
			"created_at", "started_at", "finished_at", "updated_at", "lease_expires_at", "heartbeat_at"} {
			if _, ok := raw[f]; !ok {
				t.Errorf("job JSON lacks %q: %s", f, raw)
			}
		}
		for _, f := range []string{"lease_token", "token"} {
			if _, ok := raw[f]; ok {
				t.Errorf("job JSON shows %q", f)
			}
		}
		var p map[string]json.RawMessage
		_ = json.Unmarshal(raw["progress"], &p)
		for _, f := range []string{"phase", "done", "total", "items"} {
			if _, ok := p[f]; !ok {
				t.Errorf("progress JSON lacks %q: %s", f, raw["progress"])
			}
		}

		s.do("GET", "/api/v1/jobs/0190b7a4-0000-7000-8000-000000000000", "").problem(t, 404, "")
		s.do("GET", "/api/v1/jobs/nope", "").problem(t, 400, "id")
	})
}

func TestSubmitIdempotency(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{})

		first := s.submit(t, `{"kind":"k","idempotency_key":"req-1","args":{"n":1}}`, 201)
		again := s.submit(t, `{"kind":"k","idempotency_key":"req-1","args":{"n":1}}`, 200)
		if again.ID != first.ID {
			t.Errorf("idempotency key: got job %s, want %s", again.ID, first.ID)
		}

		// Active duplicates: same canonical (queue, kind, args) while queued
		// or running, whatever the key order and null members.
		a := s.submit(t, `{"kind":"parse","unique":"active","args":{"title":"x","ids":[1,2]}}`, 201)
		b := s.submit(t, `{"kind":"parse","unique":"active","args":{"ids":[1,2],"title":"x","gone":null}}`, 200)
		if b.ID != a.ID {
			t.Errorf("active duplicate: got job %s, want %s", b.ID, a.ID)
		}
		s.submit(t, `{"kind":"parse","unique":"active","args":{"title":"y"}}`, 201)

		// Finished jobs do not block a new submission in active mode.
		j := claim(t, st, "default")
		for j.ID != a.ID {
			finish(t, st, j, store.OutcomeSucceeded, "", "")
			j = claim(t, st, "default")
		}
		finish(t, st, j, store.OutcomeSucceeded, "", "")
		c := s.submit(t, `{"kind":"parse","unique":"active","args":{"title":"x","ids":[1,2]}}`, 201)
		if c.ID == a.ID {
			t.Error("a finished job blocked an active-unique submission")
		}

		// The dataloader trigger answers {job_id, status}, 201 then 200.
		var tr1, tr2 api.TriggerResponse
		s.do("POST", "/api/v1/jobs/trigger", `{"queue":"load.cbr","task":"etl","idempotency_key":"t-1","lock_key":"cbr","available_at":"2030-01-02T03:04:05Z"}`).must(t, 201, &tr1)
		// The same request, its time spelled in another zone and member.
		s.do("POST", "/api/v1/jobs/trigger", `{"queue":"load.cbr","task":"etl","idempotency_key":"t-1","lock_key":"cbr","run_at":"2030-01-02T04:04:05+01:00"}`).must(t, 200, &tr2)
		if tr1.JobID != tr2.JobID || tr1.Status != api.StateQueued {
			t.Errorf("trigger answers %+v then %+v", tr1, tr2)
		}
		var tj api.Job
		s.do("GET", "/api/v1/jobs/"+tr1.JobID.String(), "").must(t, 200, &tj)
		if tj.Kind != "etl" || tj.Queue != "load.cbr" || !tj.RunAt.Equal(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)) {
			t.Errorf("triggered job %+v", tj)
		}
	})
}

func TestCancelRetryEventsStatus(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{})
		ctx := context.Background()

		// Queued → canceled at once; again → 409; retry → queued.
		q := s.submit(t, `{"kind":"k","queue":"a"}`, 201)
		var j api.Job
		s.do("POST", "/api/v1/jobs/"+q.ID.String()+"/cancel", "").must(t, 200, &j)
		if j.State != api.StateCanceled {
			t.Errorf("cancel of a queued job: state %s", j.State)
		}
		s.do("POST", "/api/v1/jobs/"+q.ID.String()+"/cancel", "").problem(t, 409, "")
		s.do("POST", "/api/v1/jobs/"+q.ID.String()+"/retry", "").must(t, 200, &j)
		if j.State != api.StateQueued || j.Attempt != 0 {
			t.Errorf("retry: %+v", j)
		}
		s.do("POST", "/api/v1/jobs/"+q.ID.String()+"/retry", "").problem(t, 409, "")

		// Running → cancel_requested, still running.
		running := claim(t, st, "a")
		s.do("POST", "/api/v1/jobs/"+running.ID.String()+"/cancel", "").must(t, 200, &j)
		if j.State != api.StateRunning || !j.CancelRequested {
			t.Errorf("cancel of a running job: %+v", j)
		}
		// The worker then fails it: the cancel request wins over a retry.
		finish(t, st, running, store.OutcomeFailed, "", "boom")

		// Dataloader status.
		var status api.JobStatus
		s.do("GET", "/api/v1/jobs/"+running.ID.String()+"/status", "").must(t, 200, &status)
		if status.JobID != running.ID || status.Status != api.StateCanceled || status.Attempt != 1 ||
			status.StartedAt == nil || status.FinishedAt == nil || status.Error != "boom" {
			t.Errorf("status %+v", status)
		}

		// The journal, oldest first.
		var evs api.EventList
		s.do("GET", "/api/v1/jobs/"+q.ID.String()+"/events", "").must(t, 200, &evs)
		var kinds []string
		for _, e := range evs.Events {
			kinds = append(kinds, e.Kind)
		}
		want := "queued canceled manual-retry claimed cancel-requested canceled"
		if got := strings.Join(kinds, " "); got != want {
			t.Errorf("journal %q, want %q", got, want)
		}

		unknown := "/api/v1/jobs/0190b7a4-0000-7000-8000-000000000000"
		for _, p := range []string{"/cancel", "/retry", "/events", "/status", "/stream", ""} {
			method := "GET"
			if p == "/cancel" || p == "/retry" {
				method = "POST"
			}
			s.do(method, unknown+p, "").problem(t, 404, "")
		}
		if n := countJobs(t, st); n != 1 {
			t.Errorf("%d jobs, want 1", n)
		}
		_ = ctx
	})
}

func TestGetWait(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{})
		q := s.submit(t, `{"kind":"k"}`, 201)

		// The wait ends with the job still queued.
		var j api.Job
		s.do("GET", "/api/v1/jobs/"+q.ID.String()+"?wait=1ms", "").must(t, 200, &j)
		if j.State != api.StateQueued {
			t.Errorf("state %s after a short wait", j.State)
		}

		// A long wait answers when the job finishes.
		got := make(chan *response, 1)
		go func() { got <- s.do("GET", "/api/v1/jobs/"+q.ID.String()+"?wait=60s", "") }()
		run := claim(t, st, "default")
		finish(t, st, run, store.OutcomeSucceeded, `{"ok":true}`, "")
		(<-got).must(t, 200, &j)
		if j.State != api.StateSucceeded || string(j.Result) != `{"ok":true}` {
			t.Errorf("waited job %+v", j)
		}

		s.do("GET", "/api/v1/jobs/"+q.ID.String()+"?wait=soon", "").problem(t, 400, "wait")
		s.do("GET", "/api/v1/jobs/"+q.ID.String()+"?wait=-1s", "").problem(t, 422, "wait")
		s.do("GET", "/api/v1/jobs/"+q.ID.String()+"?wiat=1s", "").problem(t, 400, "wiat")
	})
}

func TestQueues(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{})
		for i := range 3 {
			s.submit(t, fmt.Sprintf(`{"kind":"k","queue":"q1","args":{"i":%d}}`, i), 201)
		}
		s.submit(t, `{"kind":"k","queue":"q2"}`, 201)
		finish(t, st, claim(t, st, "q1"), store.OutcomeSucceeded, "", "")

		var q api.Queue
		s.do("POST", "/api/v1/queues/q1/pause", "").must(t, 200, &q)
		if q.Name != "q1" || !q.Paused || q.Counts[api.StateQueued] != 2 || q.Counts[api.StateSucceeded] != 1 {
			t.Errorf("paused queue %+v", q)
		}
		js, err := st.JobClaim(context.Background(), store.ClaimParams{Queue: "q1", Max: 10, Owner: "test"})
		if err != nil || len(js) != 0 {
			t.Errorf("claim from a paused queue: %d jobs, %v", len(js), err)
		}
		s.do("POST", "/api/v1/queues/fresh/pause", "").must(t, 200, &q)
		if q.Name != "fresh" || !q.Paused || q.Counts[api.StateQueued] != 0 {
			t.Errorf("new paused queue %+v", q)
		}

		var list api.QueueList
		s.do("GET", "/api/v1/queues", "").must(t, 200, &list)
		byName := map[string]api.Queue{}
		for _, q := range list.Queues {
			byName[q.Name] = q
		}
		if !byName["q1"].Paused || byName["q2"].Paused || byName["q2"].Counts[api.StateQueued] != 1 || !byName["fresh"].Paused {
			t.Errorf("queues %+v", list.Queues)
		}

		s.do("POST", "/api/v1/queues/q1/resume", "").must(t, 200, &q)
		if q.Paused {
			t.Errorf("resumed queue %+v", q)
		}
		s.do("POST", "/api/v1/queues/%01x/pause", "").problem(t, 400, "name")
	})
}

func TestHealthAndStatus(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{Version: "1.2.3", AdminSecret: "s3cret"})
		s.submit(t, `{"kind":"k"}`, 201)

		var h api.Health
		s.do("GET", "/health", "", "Authorization: ").must(t, 200, &h)
		var status api.Status
		s.do("GET", "/status", "").must(t, 200, &status)
		if status.Status != "ok" || status.Version != "1.2.3" || status.Jobs[api.StateQueued] != 1 || status.StartedAt.IsZero() {
			t.Errorf("status %+v", status)
		}

		// A database that does not answer: 503, while /health stays 200.
		st.Close()
		s.do("GET", "/status", "").problem(t, 503, "")
		s.do("GET", "/health", "").must(t, 200, &h)
	})
}

func TestUnknownRoutes(t *testing.T) {
	s := newServer(t, openStore(t, "sqlite"), httpapi.Config{})
	s.do("GET", "/api/v1/nothing", "").problem(t, 404, "")
	s.do("GET", "/api/v1//jobs", "").must(t, 200, nil) // redirected to the clean path
	r := s.do("DELETE", "/api/v1/jobs", "")
	r.problem(t, 405, "")
	if allow := r.header.Get("Allow"); !strings.Contains(allow, "GET") || !strings.Contains(allow, "POST") {
		t.Errorf("Allow %q", allow)
	}
}
