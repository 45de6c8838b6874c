package httpapi_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/store"
)

// TestDurationsInBodies: every duration a body carries is taken as a Go
// duration string or a number of seconds, and every answer that shows
// one shows it both ways (member and member_seconds); a value of neither
// form is a 400 naming the member, one out of range a 422 naming it.
func TestDurationsInBodies(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{})
		var j api.Job
		s.do("POST", "/api/v1/jobs", `{"kind":"k","lease_ttl":90,"timeout":1.5}`).must(t, 201, &j)
		if time.Duration(j.LeaseTTL) != 90*time.Second || j.LeaseTTLSeconds != 90 {
			t.Errorf("lease_ttl %s (%v seconds), want 1m30s (90)", time.Duration(j.LeaseTTL), j.LeaseTTLSeconds)
		}
		if j.Timeout == nil || time.Duration(*j.Timeout) != 1500*time.Millisecond || j.TimeoutSeconds == nil || *j.TimeoutSeconds != 1.5 {
			t.Errorf("timeout %v (%v seconds), want 1.5s", j.Timeout, j.TimeoutSeconds)
		}
		var raw map[string]json.RawMessage
		s.do("GET", "/api/v1/jobs/"+j.ID.String(), "").must(t, 200, &raw)
		if string(raw["lease_ttl"]) != `"1m30s"` || string(raw["lease_ttl_seconds"]) != `90` || string(raw["timeout_seconds"]) != `1.5` {
			t.Errorf("the job shows lease_ttl %s / %s, timeout_seconds %s", raw["lease_ttl"], raw["lease_ttl_seconds"], raw["timeout_seconds"])
		}
		var none map[string]json.RawMessage
		s.do("POST", "/api/v1/jobs", `{"kind":"k","lease_ttl":"2m"}`).must(t, 201, &none)
		if string(none["timeout"]) != `null` || string(none["timeout_seconds"]) != `null` || string(none["lease_ttl_seconds"]) != `120` {
			t.Errorf("a job without a timeout shows timeout %s, timeout_seconds %s, lease_ttl_seconds %s",
				none["timeout"], none["timeout_seconds"], none["lease_ttl_seconds"])
		}

		before := countJobs(t, st)
		for _, c := range []struct {
			body   string
			status int
			field  string
		}{
			{`{"kind":"k","lease_ttl":"ninety"}`, 400, "lease_ttl"},
			{`{"kind":"k","lease_ttl":"90"}`, 400, "lease_ttl"},
			{`{"kind":"k","lease_ttl":true}`, 400, "lease_ttl"},
			{`{"kind":"k","lease_ttl":1e300}`, 400, "lease_ttl"},
			{`{"kind":"k","lease_ttl":0}`, 422, "lease_ttl"},
			{`{"kind":"k","lease_ttl":"0s"}`, 422, "lease_ttl"},
			{`{"kind":"k","lease_ttl":0.5}`, 422, "lease_ttl"},
			{`{"kind":"k","timeout":0.999}`, 422, "timeout"},
			{`{"kind":"k","timeout":-5}`, 422, "timeout"},
		} {
			s.do("POST", "/api/v1/jobs", c.body).problem(t, c.status, c.field)
		}
		if after := countJobs(t, st); after != before {
			t.Errorf("refused submissions inserted %d jobs", after-before)
		}

		var st2 map[string]json.RawMessage
		s.do("GET", "/status", "").must(t, 200, &st2)
		if _, ok := st2["uptime_seconds"]; !ok {
			t.Errorf("/status without uptime_seconds: %v", st2)
		}
	})
}

// TestDurationsOfQueuesAndSchedules: a queue's rate period and a
// schedule's job durations are taken in either form, or as their
// _seconds sibling, or both when they agree (an answer sent back as it
// was read); both that disagree are a 422 naming the sibling.
func TestDurationsOfQueuesAndSchedules(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{})
		var q api.Queue
		s.do("PUT", "/api/v1/queues/rated", `{"rate":{"limit":10,"period":60}}`).must(t, 200, &q)
		if q.Rate == nil || time.Duration(q.Rate.Period) != time.Minute || q.Rate.PeriodSeconds == nil || *q.Rate.PeriodSeconds != 60 {
			t.Fatalf("rate %+v, want a period of 1m shown as 60 seconds too", q.Rate)
		}
		s.do("PUT", "/api/v1/queues/rated", `{"rate":{"limit":10,"period_seconds":0.5}}`).must(t, 200, &q)
		if time.Duration(q.Rate.Period) != 500*time.Millisecond {
			t.Fatalf("period from period_seconds 0.5: %s", time.Duration(q.Rate.Period))
		}
		body, _ := json.Marshal(q.QueueLimits) // read back, sent again
		s.do("PUT", "/api/v1/queues/rated", string(body)).must(t, 200, nil)
		s.do("PUT", "/api/v1/queues/rated", `{"rate":{"limit":10,"period":"1m","period_seconds":30}}`).problem(t, 422, "rate.period_seconds")
		s.do("PUT", "/api/v1/queues/rated", `{"rate":{"limit":10,"period":700000}}`).problem(t, 422, "rate.period")
		s.do("PUT", "/api/v1/queues/rated", `{"rate":{"limit":10}}`).problem(t, 422, "rate.period")
		s.do("PUT", "/api/v1/queues/rated", `{"rate":{"limit":10,"period":"soon"}}`).problem(t, 400, "rate.period")

		var sc api.Schedule
		s.do("PUT", "/api/v1/schedules/nightly", `{"cron":"@daily","job":{"kind":"k","lease_ttl":30,"timeout":"2m"}}`).must(t, 201, &sc)
		if time.Duration(sc.Job.LeaseTTL) != 30*time.Second || sc.Job.LeaseTTLSeconds == nil || *sc.Job.LeaseTTLSeconds != 30 ||
			sc.Job.TimeoutSeconds == nil || *sc.Job.TimeoutSeconds != 120 {
			t.Fatalf("schedule job %+v, want lease_ttl 30s and timeout 2m, in seconds too", sc.Job)
		}
		req := api.ScheduleRequest{Cron: sc.Cron, Timezone: sc.Timezone, Job: sc.Job, Overlap: sc.Overlap, CatchUp: sc.CatchUp, CatchUpLimit: sc.CatchUpLimit}
		body, _ = json.Marshal(req) // read back, sent again
		s.do("PUT", "/api/v1/schedules/nightly", string(body)).must(t, 200, nil)
		s.do("PUT", "/api/v1/schedules/nightly", `{"cron":"@daily","job":{"kind":"k","lease_ttl":"30s","lease_ttl_seconds":31}}`).problem(t, 422, "job.lease_ttl_seconds")
		s.do("PUT", "/api/v1/schedules/nightly", `{"cron":"@daily","job":{"kind":"k","timeout_seconds":45}}`).must(t, 200, &sc)
		if time.Duration(sc.Job.Timeout) != 45*time.Second {
			t.Fatalf("timeout from timeout_seconds 45: %s", time.Duration(sc.Job.Timeout))
		}
	})
}

// TestDurationsInQueries: ?wait= and a process call's ?timeout= take a
// number of seconds or a Go duration; out of range is a 422 naming the
// parameter (no longer brought into range), neither form a 400.
func TestDurationsInQueries(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{})
		j := s.submit(t, `{"kind":"k","queue":"idle"}`, 201)
		path := "/api/v1/jobs/" + j.ID.String()
		for _, ok := range []string{"0", "0.01", "10ms", "0s"} {
			s.do("GET", path+"?wait="+ok, "").must(t, 200, nil)
		}
		for _, c := range []struct {
			wait   string
			status int
		}{{"90s", 422}, {"61", 422}, {"60.5", 422}, {"-1", 422}, {"-1s", 422}, {"soon", 400}, {"1_0", 400}} {
			s.do("GET", path+"?wait="+c.wait, "").problem(t, c.status, "wait")
		}
		for _, c := range []struct {
			timeout string
			status  int
		}{{"6m", 422}, {"301", 422}, {"-1", 422}, {"later", 400}} {
			s.do("POST", "/api/v1/processes/ns/p1/call?timeout="+c.timeout, `{}`).problem(t, c.status, "timeout")
		}
	})
}

// TestFailRetryAfterSeconds: a retryable failure's retry_after in
// seconds delays the next attempt by that long.
func TestFailRetryAfterSeconds(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{AdminSecret: adminSecret})
		w := s.registerWorker(t, "w1")
		cj := w.claim(t, "later")
		w.do("POST", "/api/v1/worker/jobs/"+cj.ID.String()+"/fail",
			`{"lease_token":"`+cj.LeaseToken.String()+`","error":"x","retryable":true,"retry_after":-0.5}`).problem(t, 422, "retry_after")
		var fin api.FinishResponse
		w.do("POST", "/api/v1/worker/jobs/"+cj.ID.String()+"/fail",
			`{"lease_token":"`+cj.LeaseToken.String()+`","error":"x","retryable":true,"retry_after":3600.5}`).must(t, 200, &fin)
		got, err := st.JobGet(context.Background(), cj.ID)
		if err != nil {
			t.Fatal(err)
		}
		// updated_at is the failure's time (SQLite may stamp it some
		// microseconds later, to keep it strictly increasing).
		if d := got.RunAt.Sub(got.UpdatedAt); d > time.Hour+500*time.Millisecond || d < time.Hour+499*time.Millisecond {
			t.Errorf("run_at %s after the failure, want 1h0m0.5s", d)
		}
	})
}
