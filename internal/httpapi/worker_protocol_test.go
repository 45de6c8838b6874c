package httpapi_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// outcome sends one outcome of a claimed job: complete, fail or release.
func (w *remoteWorker) outcome(cj api.ClaimedJob, what, members string) *response {
	w.s.t.Helper()
	body := `{"lease_token":"` + cj.LeaseToken.String() + `"` + members + `}`
	return w.do("POST", "/api/v1/worker/jobs/"+cj.ID.String()+"/"+what, body)
}

// TestOutcomeRepeated: an outcome sent again with its lease token (its
// answer was lost) is answered 200 with the job's current state and
// repeat, and changes nothing: a complete, a fail, a release; another
// outcome with that token is still 409 lease-lost; a repeat after
// another worker claimed the job again answers the first outcome and
// leaves the new attempt alone.
func TestOutcomeRepeated(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		w := s.registerWorker(t, "w1")
		other := s.registerWorker(t, "w2")
		for _, c := range []struct {
			what, members string
			state         api.State
		}{
			{"complete", `,"result":{"n":1}`, api.StateSucceeded},
			{"fail", `,"error":"boom"`, api.StateFailed},
			{"fail", `,"error":"again","retryable":true,"retry_after":3600`, api.StateQueued},
			{"release", ``, api.StateQueued},
		} {
			cj := w.claim(t, "rep-"+c.what+string(c.state))
			var first, again api.FinishResponse
			w.outcome(cj, c.what, c.members).must(t, 200, &first)
			before, err := st.JobGet(context.Background(), cj.ID)
			if err != nil {
				t.Fatal(err)
			}
			w.outcome(cj, c.what, c.members).must(t, 200, &again)
			if first.State != c.state || first.Repeat || again.State != c.state || !again.Repeat {
				t.Fatalf("%s: first %+v, again %+v; want %s, then a repeat", c.what, first, again, c.state)
			}
			after, _ := st.JobGet(context.Background(), cj.ID)
			if !after.UpdatedAt.Equal(before.UpdatedAt) || after.State != before.State {
				t.Fatalf("%s repeated changed the job: %+v", c.what, after)
			}
			for _, otherOutcome := range []string{"complete", "fail", "release"} {
				if otherOutcome != c.what {
					w.outcome(cj, otherOutcome, ``).problem(t, 409, "lease_token")
				}
			}
			other.outcome(cj, c.what, c.members).problem(t, 409, "lease_token") // not its lease
		}

		// Released, claimed again by another worker: the release sent
		// again is still its repeat, and the new attempt keeps running.
		cj := w.claim(t, "again")
		w.outcome(cj, "release", ``).must(t, 200, nil)
		var got api.ClaimResponse
		other.do("POST", "/api/v1/worker/claim", `{"queues":["again"]}`).must(t, 200, &got)
		if len(got.Jobs) != 1 || got.Jobs[0].ID != cj.ID {
			t.Fatalf("the other worker claimed %+v", got.Jobs)
		}
		var again api.FinishResponse
		w.outcome(cj, "release", ``).must(t, 200, &again)
		if !again.Repeat || again.State != api.StateRunning {
			t.Fatalf("release sent again after the job was claimed again: %+v, want a repeat, state running", again)
		}
		j, _ := st.JobGet(context.Background(), cj.ID)
		if j.LeaseToken != got.Jobs[0].LeaseToken || j.State != job.StateRunning {
			t.Fatalf("the new attempt: %+v", j)
		}
		other.outcome(got.Jobs[0], "complete", `,"result":1`).must(t, 200, nil)
	})
}

// TestCancelRequestedEverywhere: once a running job's cancel is
// requested, the heartbeat, progress and checkpoint answers all say so;
// a complete still succeeds the job, a fail ends it canceled.
func TestCancelRequestedEverywhere(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		w := s.registerWorker(t, "w1")
		for _, end := range []struct {
			what  string
			state api.State
		}{{"complete", api.StateSucceeded}, {"fail", api.StateCanceled}, {"release", api.StateCanceled}} {
			cj := w.claim(t, "cancel-"+end.what)
			lease := `"lease_token":"` + cj.LeaseToken.String() + `"`
			base := "/api/v1/worker/jobs/" + cj.ID.String()
			for _, requested := range []bool{false, true} {
				if requested {
					s.do("POST", "/api/v1/jobs/"+cj.ID.String()+"/cancel", "").must(t, 200, nil)
				}
				var hb api.HeartbeatResponse
				w.do("POST", "/api/v1/worker/heartbeat", `{"status":"busy","leases":[{"id":"`+cj.ID.String()+`",`+lease+`}]}`).must(t, 200, &hb)
				var pr api.ProgressResponse
				w.do("POST", base+"/progress", `{`+lease+`,"done":1,"total":2}`).must(t, 200, &pr)
				var cp api.CheckpointResponse
				w.do("POST", base+"/checkpoint", `{`+lease+`,"checkpoint":{"at":1}}`).must(t, 200, &cp)
				if len(hb.Leases) != 1 || !hb.Leases[0].Held || hb.Leases[0].CancelRequested != requested ||
					pr.CancelRequested != requested || cp.CancelRequested != requested {
					t.Fatalf("cancel requested %v: heartbeat %+v, progress %+v, checkpoint %+v", requested, hb, pr, cp)
				}
			}
			var fin api.FinishResponse
			w.outcome(cj, end.what, ``).must(t, 200, &fin)
			if fin.State != end.state {
				t.Fatalf("%s after a cancel request: %s, want %s", end.what, fin.State, end.state)
			}
		}
	})
}

// TestLeaseGuidance: a claimed job says its lease in seconds and the
// heartbeat interval the server advises: a third of the lease, at most
// the server's own heartbeat interval (10s).
func TestLeaseGuidance(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		w := s.registerWorker(t, "w1")
		for ttl, want := range map[string]float64{"6": 2, "30s": 10, "90": 10, "1h": 10, "1.5": 0.5} {
			q := "guide-" + strings.ReplaceAll(ttl, ".", "_")
			s.submit(t, `{"kind":"k","queue":"`+q+`","lease_ttl":`+jsonDuration(ttl)+`}`, 201)
			var raw struct {
				Jobs []map[string]json.RawMessage `json:"jobs"`
			}
			w.do("POST", "/api/v1/worker/claim", `{"queues":["`+q+`"]}`).must(t, 200, &raw)
			if len(raw.Jobs) != 1 {
				t.Fatalf("claimed %d", len(raw.Jobs))
			}
			var hb float64
			if err := json.Unmarshal(raw.Jobs[0]["heartbeat_interval_seconds"], &hb); err != nil || hb != want {
				t.Errorf("lease_ttl %s: heartbeat_interval_seconds %s, want %v", ttl, raw.Jobs[0]["heartbeat_interval_seconds"], want)
			}
			if _, ok := raw.Jobs[0]["lease_ttl_seconds"]; !ok {
				t.Errorf("lease_ttl %s: no lease_ttl_seconds", ttl)
			}
		}
	})
}

// jsonDuration writes a lease_ttl of the test as JSON: a number, or a
// string when it has a unit.
func jsonDuration(v string) string {
	if strings.ContainsAny(v, "smh") {
		return `"` + v + `"`
	}
	return v
}

// TestWorkerRouteErrors: a malformed lease token is a 400 naming it, a
// missing one a 422; an unknown job on every worker route is 409
// lease-lost, as openapi.json says; progress out of range is a 422
// naming done or total.
func TestWorkerRouteErrors(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		w := s.registerWorker(t, "w1")
		cj := w.claim(t, "errors")
		base := "/api/v1/worker/jobs/" + cj.ID.String()
		bodies := map[string]string{"progress": `,"done":1`, "checkpoint": `,"checkpoint":{}`, "complete": ``, "fail": `,"error":"x"`, "release": ``}
		for what, rest := range bodies {
			w.do("POST", base+"/"+what, `{"lease_token":"not-a-uuid"`+rest+`}`).problem(t, 400, "lease_token")
			w.do("POST", base+"/"+what, `{"lease_token":42`+rest+`}`).problem(t, 400, "lease_token")
			w.do("POST", base+"/"+what, `{`+strings.TrimPrefix(rest, ",")+`}`).problem(t, 422, "lease_token")
			unknown := "/api/v1/worker/jobs/" + uuid.Must(uuid.NewV7()).String() + "/" + what
			w.do("POST", unknown, `{"lease_token":"`+uuid.NewString()+`"`+rest+`}`).problem(t, 409, "lease_token")
		}
		w.do("POST", "/api/v1/worker/heartbeat", `{"leases":[{"id":"`+cj.ID.String()+`","lease_token":"x"}]}`).problem(t, 400, "leases.lease_token")
		var hb api.HeartbeatResponse
		w.do("POST", "/api/v1/worker/heartbeat", `{"leases":[{"id":"`+uuid.NewString()+`","lease_token":"`+uuid.NewString()+`"}]}`).must(t, 200, &hb)
		if len(hb.Leases) != 1 || hb.Leases[0].Held {
			t.Fatalf("heartbeat of an unknown job: %+v, want not held", hb)
		}

		lease := `"lease_token":"` + cj.LeaseToken.String() + `"`
		for _, c := range []struct{ body, field string }{
			{`"done":3,"total":2`, "done"},
			{`"done":-1`, "done"},
			{`"done":0,"total":-1`, "total"},
		} {
			w.do("POST", base+"/progress", `{`+lease+`,`+c.body+`}`).problem(t, 422, c.field)
		}
		w.do("POST", base+"/progress", `{`+lease+`,"done":5,"total":0}`).must(t, 200, nil) // total unknown
		w.do("POST", base+"/progress", `{`+lease+`,"done":2,"total":2}`).must(t, 200, nil)
	})
}

// TestLastError: a job that succeeds after a failed attempt shows that
// attempt's error under last_error, not as error; one queued again after
// it, or failed, shows it under both.
func TestLastError(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		w := s.registerWorker(t, "w1")
		cj := w.claim(t, "flaky")
		w.outcome(cj, "fail", `,"error":"flaked","retryable":true,"retry_after":0`).must(t, 200, nil)
		var j api.Job
		s.do("GET", "/api/v1/jobs/"+cj.ID.String(), "").must(t, 200, &j)
		if j.State != api.StateQueued || j.Error != "flaked" || j.LastError != "flaked" {
			t.Fatalf("queued again: error %q last_error %q", j.Error, j.LastError)
		}
		var got api.ClaimResponse
		w.do("POST", "/api/v1/worker/claim", `{"queues":["flaky"]}`).must(t, 200, &got)
		if len(got.Jobs) != 1 {
			t.Fatalf("claimed %d", len(got.Jobs))
		}
		w.outcome(got.Jobs[0], "complete", `,"result":1`).must(t, 200, nil)
		s.do("GET", "/api/v1/jobs/"+cj.ID.String(), "").must(t, 200, &j)
		if j.State != api.StateSucceeded || j.Error != "" || j.LastError != "flaked" {
			t.Fatalf("succeeded after a failure: error %q last_error %q, want none and flaked", j.Error, j.LastError)
		}
	})
}

// TestOpenAPIServersFollowRequest: the served document's servers entry
// is the URL the request was sent to, https behind a proxy that says so.
func TestOpenAPIServersFollowRequest(t *testing.T) {
	s := newServer(t, openStore(t, "sqlite"), httpapi.Config{})
	for _, c := range []struct {
		hdr  []string
		want string
	}{
		{[]string{"Host: jobd.example:8443"}, "http://jobd.example:8443"},
		{[]string{"Host: jobd.example", "X-Forwarded-Proto: https"}, "https://jobd.example"},
		{[]string{"Host: jobd.example", "X-Forwarded-Proto: gopher"}, "http://jobd.example"},
		{nil, s.URL},
	} {
		var doc struct {
			Servers []struct {
				URL string `json:"url"`
			} `json:"servers"`
		}
		s.do("GET", "/openapi.json", "", c.hdr...).must(t, 200, &doc)
		if len(doc.Servers) != 1 || doc.Servers[0].URL != c.want {
			t.Errorf("%v: servers %+v, want %s", c.hdr, doc.Servers, c.want)
		}
	}
}
