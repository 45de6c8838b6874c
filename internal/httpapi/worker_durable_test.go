package httpapi_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/store"
)

// claimAgain claims the one job of queue for w, over HTTP.
func (w *remoteWorker) claimAgain(t *testing.T, queue string) api.ClaimedJob {
	t.Helper()
	var got api.ClaimResponse
	w.do("POST", "/api/v1/worker/claim", `{"queues":["`+queue+`"]}`).must(t, 200, &got)
	if len(got.Jobs) != 1 {
		t.Fatalf("claimed %d jobs of %q, want 1", len(got.Jobs), queue)
	}
	return got.Jobs[0]
}

// TestWorkerStepsOverHTTP: steps recorded over HTTP come back on the
// retry's claim (name → result), once each; GET shows them with their
// timings; a stale lease, a bad name and a repeat are answered as the
// protocol says.
func TestWorkerStepsOverHTTP(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		w := s.registerWorker(t, "w1")
		cj := w.claim(t, "steps")
		if cj.Steps != nil || cj.Children != nil || cj.Signal != nil {
			t.Fatalf("a first claim carries %+v %+v %+v", cj.Steps, cj.Children, cj.Signal)
		}
		base := "/api/v1/worker/jobs/" + cj.ID.String()
		tok := `"lease_token":"` + cj.LeaseToken.String() + `"`
		var res api.StepResponse
		w.do("POST", base+"/steps", `{`+tok+`,"name":"upload","result":{"url":"u"},"started_at":"2020-01-01T00:00:00Z"}`).must(t, 200, &res)
		if !res.Recorded || res.Step.Name != "upload" || res.Step.Attempt != 1 || res.Step.DurationSeconds <= 0 {
			t.Fatalf("step: %+v", res)
		}
		w.do("POST", base+"/steps", `{`+tok+`,"name":"upload","result":2}`).must(t, 200, &res)
		if res.Recorded || string(res.Step.Result) != `{"url":"u"}` && string(res.Step.Result) != `{"url": "u"}` {
			t.Fatalf("step again: %+v, want the first one", res)
		}
		w.do("POST", base+"/steps", `{`+tok+`,"result":1}`).problem(t, 422, "name")
		w.do("POST", base+"/steps", `{"lease_token":"`+cj.ID.String()+`","name":"x"}`).problem(t, 409, "lease_token")
		w.outcome(cj, "fail", `,"error":"boom","retryable":true,"retry_after":0`).must(t, 200, nil)
		again := w.claimAgain(t, "steps")
		if len(again.Steps) != 1 || string(again.Steps["upload"]) == "" {
			t.Fatalf("retry's claim steps %v", again.Steps)
		}
		var j api.Job
		s.do("GET", "/api/v1/jobs/"+cj.ID.String(), "").must(t, 200, &j)
		if len(j.Steps) != 1 || j.Steps[0].Name != "upload" || j.Steps[0].FinishedAt.IsZero() {
			t.Fatalf("GET steps %+v", j.Steps)
		}
	})
}

// TestWorkerChildrenAndWaitOverHTTP: a parent spawns children (a bad one
// refuses them all, naming children[i].field, and so does a queue outside
// a worker's queues; a key again is the same child), waits for them holding no lease, and its next claim carries
// them by key once they are final.
func TestWorkerChildrenAndWaitOverHTTP(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		w := s.registerWorker(t, "w1")
		cj := w.claim(t, "parents")
		base := "/api/v1/worker/jobs/" + cj.ID.String()
		tok := `"lease_token":"` + cj.LeaseToken.String() + `"`
		w.do("POST", base+"/children", `{`+tok+`,"children":[{"key":"a","kind":"sq","queue":"kids"},{"key":"b","queue":"kids"}]}`).problem(t, 422, "children[1].kind")
		w.do("POST", base+"/children", `{`+tok+`,"children":[{"key":"a","kind":"sq","queue":"jobd.internal"}]}`).problem(t, 422, "children[0].queue")
		w.do("POST", base+"/children", `{`+tok+`,"children":[{"kind":"sq","queue":"kids"}]}`).problem(t, 422, "children[0].key")
		limited, _ := s.registerWorkerWith(t, `{"name":"limited","queues":["parents"]}`)
		lj := limited.claim(t, "parents")
		limited.do("POST", "/api/v1/worker/jobs/"+lj.ID.String()+"/children",
			`{"lease_token":"`+lj.LeaseToken.String()+`","children":[{"key":"a","kind":"sq","queue":"kids"}]}`).problem(t, 403, "children[0].queue")
		if n := countJobs(t, st); n != 2 {
			t.Fatalf("%d jobs after refused spawns, want 2", n)
		}
		var spawned api.ChildrenResponse
		body := `{` + tok + `,"children":[{"key":"a","kind":"sq","queue":"kids","args":{"n":3}},{"key":"b","kind":"sq","queue":"kids","args":{"n":4}}]}`
		w.do("POST", base+"/children", body).must(t, 200, &spawned)
		if len(spawned.Children) != 2 || !spawned.Children[0].Created || spawned.Children[1].Key != "b" {
			t.Fatalf("spawned %+v", spawned)
		}
		var again api.ChildrenResponse
		w.do("POST", base+"/children", body).must(t, 200, &again)
		if again.Children[0].Created || again.Children[0].ID != spawned.Children[0].ID {
			t.Fatalf("spawned again %+v", again)
		}
		var waited api.WaitResponse
		w.do("POST", base+"/wait", `{`+tok+`,"for":"children"}`).must(t, 200, &waited)
		if waited.State != api.StateWaiting {
			t.Fatalf("wait: %+v", waited)
		}
		w.do("POST", base+"/wait", `{`+tok+`,"for":"children"}`).problem(t, 409, "lease_token")
		for range 2 {
			kid := w.claimAgain(t, "kids")
			var args struct{ N int }
			if err := json.Unmarshal(kid.Args, &args); err != nil {
				t.Fatal(err)
			}
			w.outcome(kid, "complete", fmt.Sprintf(`,"result":%d`, args.N*args.N)).must(t, 200, nil)
		}
		resumed := w.claimAgain(t, "parents")
		if resumed.ID != cj.ID || resumed.Attempt != 1 || len(resumed.Children) != 2 ||
			string(resumed.Children["a"].Result) != "9" || resumed.Children["b"].State != api.StateSucceeded {
			t.Fatalf("resumed: %+v children %+v", resumed.Job, resumed.Children)
		}
		var kid api.Job
		s.do("GET", "/api/v1/jobs/"+spawned.Children[0].ID.String(), "").must(t, 200, &kid)
		if kid.ParentID == nil || *kid.ParentID != cj.ID || kid.ChildKey != "a" {
			t.Fatalf("child shows parent %v key %q", kid.ParentID, kid.ChildKey)
		}
	})
}

// TestSignalOverHTTP: a signal wait with a timeout in seconds is a
// delayed job; POST /api/v1/jobs/{id}/signal wakes it, and its claim
// carries the signal; an early signal is kept; a bad wait names its
// field; the route needs the cancel scope.
func TestSignalOverHTTP(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		w := s.registerWorker(t, "w1")
		cj := w.claim(t, "approvals")
		base := "/api/v1/worker/jobs/" + cj.ID.String()
		tok := `"lease_token":"` + cj.LeaseToken.String() + `"`
		w.do("POST", base+"/wait", `{`+tok+`,"for":"signal"}`).problem(t, 422, "signal")
		w.do("POST", base+"/wait", `{`+tok+`,"for":"later"}`).problem(t, 422, "for")
		w.do("POST", base+"/wait", `{`+tok+`,"until":"tomorrow"}`).problem(t, 400, "until")
		var waited api.WaitResponse
		w.do("POST", base+"/wait", `{`+tok+`,"for":"signal","signal":"approved","timeout":3600}`).must(t, 200, &waited)
		if waited.State != api.StateQueued || !waited.RunAt.After(cj.RunAt) {
			t.Fatalf("timed wait: %+v", waited)
		}
		w.do("POST", "/api/v1/jobs/"+cj.ID.String()+"/signal", `{"name":"approved"}`).problem(t, 403, "")
		var sig api.SignalResponse
		s.do("POST", "/api/v1/jobs/"+cj.ID.String()+"/signal", `{"name":"approved","payload":{"by":"ann"}}`).must(t, 200, &sig)
		if !sig.Delivered || sig.Job.State != api.StateQueued {
			t.Fatalf("signal: %+v", sig)
		}
		resumed := w.claimAgain(t, "approvals")
		if resumed.Signal == nil || resumed.Signal.Name != "approved" || resumed.Signal.TimedOut {
			t.Fatalf("resumed with %+v", resumed.Signal)
		}
		s.do("POST", "/api/v1/jobs/"+cj.ID.String()+"/signal", `{"payload":1}`).problem(t, 422, "name")
		w.outcome(resumed, "complete", ``).must(t, 200, nil)
		s.do("POST", "/api/v1/jobs/"+cj.ID.String()+"/signal", `{"name":"approved"}`).problem(t, 409, "")
	})
}
