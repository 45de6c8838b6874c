package schedule_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/schedule"
	"github.com/jobd/jobd/store"
)

// post sends body to url+path with the bearer credential and returns the
// status and body.
func post(t *testing.T, url, path, cred, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+cred)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// TestTickKeySquatRefused: a submit-only key cannot take a schedule's
// next tick by submitting its key ("schedule:NAME:TICK") first: the
// submission is 422 naming idempotency_key, and the tick makes its own
// job, which an overlap-skip schedule then waits on and moves past.
func TestTickKeySquatRefused(t *testing.T) {
	eachStore(t, func(t *testing.T, f *fixture) {
		const secret = "squat-admin-secret"
		h, err := httpapi.New(httpapi.Config{Store: f.st, Clock: f.clk, Schedules: f.sch, AdminSecret: secret, Logger: discard})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		status, body := post(t, srv.URL, "/api/v1/keys", secret, `{"name":"intruder","scopes":["submit"]}`)
		var key api.Key
		if status != http.StatusCreated || json.Unmarshal(body, &key) != nil {
			t.Fatalf("create key: %d %s", status, body)
		}

		d := every("nightly", "@every 1m", schedule.CatchUpNone)
		d.Overlap = schedule.OverlapSkip
		sc := f.put(t, d)
		tick := sc.NextRunAt
		for _, k := range []string{schedule.TickKey("nightly", tick), schedule.TriggerKey("nightly", "k1")} {
			squat, _ := json.Marshal(map[string]any{"kind": "report", "args": map[string]int{"n": 1}, "idempotency_key": k,
				"run_at": time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)})
			status, body = post(t, srv.URL, "/api/v1/jobs", key.Key, string(squat))
			var p api.Problem
			if status != http.StatusUnprocessableEntity || json.Unmarshal(body, &p) != nil || p.Field != "idempotency_key" {
				t.Fatalf("squat of %q: %d %s, want 422 naming idempotency_key", k, status, body)
			}
		}
		if res, err := f.st.JobList(t.Context(), store.ListParams{}); err != nil || res.Total != 0 {
			t.Fatalf("jobs after the refused squats: %v, %v", res, err)
		}

		f.clk.Advance(tick.Sub(f.clk.Now()))
		if n := f.tick(t); n != 1 {
			t.Fatalf("tick made %d jobs, want 1", n)
		}
		jobs := f.jobsOf(t, "nightly")
		wantTickJobs(t, jobs, "nightly", tick)
		if got := f.get(t, "nightly"); got.LastJobID != jobs[0].ID {
			t.Fatalf("last job %s, want the tick's %s", got.LastJobID, jobs[0].ID)
		}
		claimed, err := f.st.JobClaim(t.Context(), store.ClaimParams{Queue: job.DefaultQueue, Max: 1, Owner: "w"})
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claim: %v %v", claimed, err)
		}
		if _, err := f.st.JobFinish(t.Context(), []store.Outcome{{Lease: store.LeaseOf(claimed[0]), Outcome: job.Outcome{Status: store.OutcomeSucceeded}}}); err != nil {
			t.Fatal(err)
		}
		f.clk.Advance(time.Minute)
		f.tick(t)
		wantTickJobs(t, f.jobsOf(t, "nightly"), "nightly", tick, tick.Add(time.Minute))
	})
}

// TestTemplateReserved: a template that names what only jobd inserts is
// refused from the API (Put), from --schedules (ParseConfig) and, stored
// by an older jobd, at the tick (its ticks pass without a job, the
// schedule moves on) and at a trigger (422 naming the field).
func TestTemplateReserved(t *testing.T) {
	eachStore(t, func(t *testing.T, f *fixture) {
		for field, tmpl := range map[string]schedule.Template{
			"job.queue":    {Queue: "jobd.webhooks", Kind: "k"},
			"job.kind":     {Kind: "process.task"},
			"job.lock_key": {Kind: "k", LockKey: "process:c/p"},
		} {
			d := every("s", "@hourly", "")
			d.Job = tmpl
			_, _, err := f.sch.Put(t.Context(), d)
			var verr *job.ValidationError
			if !errors.As(err, &verr) || verr.Field != field {
				t.Fatalf("Put of a template naming %s: %v", field, err)
			}
			raw, _ := json.Marshal([]schedule.Definition{d})
			_, err = schedule.ParseConfig(raw, 0)
			if !errors.As(err, &verr) || verr.Field != "schedules[0]."+field {
				t.Fatalf("ParseConfig of a template naming %s: %v", field, err)
			}
		}

		// A schedule an older jobd stored.
		sc, err := f.st.SchedulePut(t.Context(), store.Schedule{Name: "old", Cron: "@every 1m", Timezone: "UTC",
			Template: json.RawMessage(`{"queue":"jobd.webhooks","kind":"jobd.webhook","args":{"subscription":"w1"}}`),
			Overlap:  schedule.OverlapAllow, CatchUp: schedule.CatchUpNone, CatchUpLimit: 1,
			Source: store.ScheduleSourceAPI, NextRunAt: start.Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		f.clk.Advance(time.Minute)
		if n := f.tick(t); n != 0 {
			t.Fatalf("tick of a reserved template made %d jobs", n)
		}
		if got := f.get(t, "old"); !got.NextRunAt.After(sc.NextRunAt) {
			t.Fatalf("next run %v, want past %v", got.NextRunAt, sc.NextRunAt)
		}
		_, err = f.sch.Trigger(t.Context(), "old", "k")
		var verr *job.ValidationError
		if !errors.As(err, &verr) || verr.Field != "job.queue" {
			t.Fatalf("trigger of a reserved template: %v", err)
		}
		if res, err := f.st.JobList(t.Context(), store.ListParams{}); err != nil || res.Total != 0 {
			t.Fatalf("jobs of a reserved template: %v, %v", res, err)
		}
	})
}

// TestTriggerKeyAfterTemplateChange: a trigger's request is the
// schedule's name and its key: sent again after the template changed, it
// answers the first trigger's job.
func TestTriggerKeyAfterTemplateChange(t *testing.T) {
	eachStore(t, func(t *testing.T, f *fixture) {
		f.put(t, every("s", "@daily", ""))
		first, err := f.sch.Trigger(t.Context(), "s", "k1")
		if err != nil || !first.Created {
			t.Fatalf("trigger: %+v %v", first, err)
		}
		d := every("s", "@daily", "")
		d.Job.Args = json.RawMessage(`{"n":2}`)
		f.put(t, d)
		f.clk.Advance(time.Minute)
		again, err := f.sch.Trigger(t.Context(), "s", "k1")
		if err != nil || again.Created || again.Job.ID != first.Job.ID {
			t.Fatalf("trigger with the same key after a template change: %+v %v, want the first job", again, err)
		}
	})
}
