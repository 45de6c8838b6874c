package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/schedule"
	"github.com/jobd/jobd/store"
)

// TestSchedulesAPI: PUT creates (201) then replaces (200) a schedule,
// GET and the list show it with its next run, pause, resume and trigger
// act on it, DELETE removes it; bad input is a 4xx naming its field.
func TestSchedulesAPI(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{})
		body := `{"cron":"0 3 * * *","timezone":"Europe/Berlin","job":{"kind":"report","args":{"deep":true},"timeout":"10m","priority":5},"overlap":"skip","catch_up":"all","catch_up_limit":3}`
		var sc api.Schedule
		r := s.do("PUT", "/api/v1/schedules/nightly", body).must(t, http.StatusCreated, &sc)
		if r.header.Get("Location") != "/api/v1/schedules/nightly" {
			t.Fatalf("Location %q", r.header.Get("Location"))
		}
		if sc.Name != "nightly" || sc.Timezone != "Europe/Berlin" || sc.Job.Kind != "report" || time.Duration(sc.Job.Timeout) != 10*time.Minute ||
			sc.Overlap != "skip" || sc.CatchUp != "all" || sc.CatchUpLimit != 3 || sc.Paused || sc.Source != "api" ||
			sc.LastRunAt != nil || sc.LastJobID != nil || sc.NextRunAt.Location() != time.UTC || !sc.NextRunAt.After(time.Now()) {
			t.Fatalf("created: %+v", sc)
		}
		if loc, _ := time.LoadLocation("Europe/Berlin"); sc.NextRunAt.In(loc).Hour() != 3 {
			t.Fatalf("next run %v is not 03:00 in Berlin", sc.NextRunAt)
		}
		var again api.Schedule
		s.do("PUT", "/api/v1/schedules/nightly", body).must(t, http.StatusOK, &again)
		if !again.NextRunAt.Equal(sc.NextRunAt) {
			t.Fatalf("a replace with the same spec moved the next run: %v, was %v", again.NextRunAt, sc.NextRunAt)
		}
		var got api.Schedule
		s.do("GET", "/api/v1/schedules/nightly", "").must(t, http.StatusOK, &got)
		var list api.ScheduleList
		s.do("GET", "/api/v1/schedules", "").must(t, http.StatusOK, &list)
		if got.Name != "nightly" || len(list.Schedules) != 1 || list.Schedules[0].Name != "nightly" {
			t.Fatalf("get %+v list %+v", got, list)
		}

		s.do("POST", "/api/v1/schedules/nightly/pause", "").must(t, http.StatusOK, &got)
		if !got.Paused {
			t.Fatal("pause: not paused")
		}
		var j api.Job
		r = s.do("POST", "/api/v1/schedules/nightly/trigger", "", "Idempotency-Key: run-1").must(t, http.StatusCreated, &j)
		if j.Schedule != "nightly" || j.ScheduledFor == nil || j.Kind != "report" || j.Timeout == nil || time.Duration(*j.Timeout) != 10*time.Minute ||
			r.header.Get("Location") != "/api/v1/jobs/"+j.ID.String() {
			t.Fatalf("triggered job %+v, Location %q", j, r.header.Get("Location"))
		}
		var same api.Job
		s.do("POST", "/api/v1/schedules/nightly/trigger", "", "Idempotency-Key: run-1").must(t, http.StatusOK, &same)
		if same.ID != j.ID {
			t.Fatalf("trigger with the same key made %s, want %s", same.ID, j.ID)
		}
		s.do("POST", "/api/v1/schedules/nightly/resume", "").must(t, http.StatusOK, &got)
		if got.Paused || got.LastJobID == nil || *got.LastJobID != j.ID {
			t.Fatalf("resumed %+v, want not paused, last job %s", got, j.ID)
		}

		for _, c := range []struct {
			method, path, body string
			status             int
			field              string
		}{
			{"PUT", "/api/v1/schedules/x", `{"cron":"every day","job":{"kind":"k"}}`, 422, "cron"},
			{"PUT", "/api/v1/schedules/x", `{"cron":"@hourly","timezone":"Mars/Base","job":{"kind":"k"}}`, 422, "timezone"},
			{"PUT", "/api/v1/schedules/x", `{"cron":"@hourly","job":{"kind":""}}`, 422, "job.kind"},
			{"PUT", "/api/v1/schedules/x", `{"cron":"@hourly","job":{"kind":"k","timeout":"soon"}}`, 400, "job.timeout"},
			{"PUT", "/api/v1/schedules/x", `{"cron":"@hourly","job":{"kind":"k"},"catch_up":"most"}`, 422, "catch_up"},
			{"PUT", "/api/v1/schedules/x", `{"cron":"@hourly","job":{"kind":"k"},"name":"y"}`, 400, "name"},
			{"GET", "/api/v1/schedules/none", "", 404, ""},
			{"POST", "/api/v1/schedules/none/pause", "", 404, ""},
			{"POST", "/api/v1/schedules/none/trigger", "", 404, ""},
			{"DELETE", "/api/v1/schedules/none", "", 404, ""},
		} {
			s.do(c.method, c.path, c.body).problem(t, c.status, c.field)
		}
		s.do("DELETE", "/api/v1/schedules/nightly", "").must(t, http.StatusNoContent, nil)
		s.do("GET", "/api/v1/schedules/nightly", "").problem(t, 404, "")
		if n := countJobs(t, st); n != 1 {
			t.Fatalf("%d jobs after the delete, want the trigger's", n)
		}
	})
}

// TestScheduleConfigOwned: a schedule of the configuration answers an API
// PUT with 409 and stays as it is.
func TestScheduleConfigOwned(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		sch, err := schedule.New(schedule.Config{Store: st})
		if err != nil {
			t.Fatal(err)
		}
		err = sch.ApplyConfig(context.Background(), []schedule.Definition{{Name: "cfg", Cron: "@hourly", Job: schedule.Template{Kind: "k"}}})
		if err != nil {
			t.Fatal(err)
		}
		s := newServer(t, st, httpapi.Config{Schedules: sch})
		s.do("PUT", "/api/v1/schedules/cfg", `{"cron":"@daily","job":{"kind":"k"}}`).problem(t, http.StatusConflict, "name")
		var got api.Schedule
		s.do("GET", "/api/v1/schedules/cfg", "").must(t, http.StatusOK, &got)
		if got.Cron != "@hourly" || got.Source != "config" {
			t.Fatalf("after a refused PUT: %+v", got)
		}
	})
}

// TestRerunAPI: the old result is readable between the rerun and the
// claim, cleared at the claim, and concurrent reruns make one.
func TestRerunAPI(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		s := newServer(t, st, httpapi.Config{})
		j := s.submit(t, `{"queue":"video","kind":"transcode","args":{"v":7}}`, 201)
		s.do("POST", "/api/v1/jobs/"+j.ID.String()+"/rerun", "").problem(t, http.StatusConflict, "")
		finish(t, st, claim(t, st, "video"), store.OutcomeSucceeded, `{"url":"v7-1.mp4"}`, "")

		const n = 6
		var wg sync.WaitGroup
		answers := make([]*api.Job, n)
		for i := range n {
			wg.Go(func() {
				var got api.Job
				body := ""
				if i%2 == 1 {
					body = `{"args":{"v":7}}`
				}
				s.do("POST", "/api/v1/jobs/"+j.ID.String()+"/rerun", body).must(t, http.StatusOK, &got)
				answers[i] = &got
			})
		}
		wg.Wait()
		for i, a := range answers {
			if a.State != api.StateQueued || a.Rerun != 1 || a.PreviousState != api.StateSucceeded {
				t.Fatalf("rerun answer %d: %+v", i, a)
			}
		}
		var ev api.EventList
		s.do("GET", "/api/v1/jobs/"+j.ID.String()+"/events", "").must(t, http.StatusOK, &ev)
		reruns := 0
		for _, e := range ev.Events {
			if e.Kind == "rerun-requested" {
				reruns++
			}
		}
		if reruns != 1 {
			t.Fatalf("%d rerun-requested entries, want 1: %+v", reruns, ev.Events)
		}

		var before api.Job
		s.do("GET", "/api/v1/jobs/"+j.ID.String(), "").must(t, http.StatusOK, &before)
		if !jsonSame(before.Result, `{"url":"v7-1.mp4"}`) || !jsonSame(before.PreviousResult, `{"url":"v7-1.mp4"}`) {
			t.Fatalf("before the claim: result %s previous %s", before.Result, before.PreviousResult)
		}
		c := claim(t, st, "video")
		if !jsonSame(c.PreviousResult, `{"url":"v7-1.mp4"}`) || c.Rerun != 1 {
			t.Fatalf("the claimed job: previous result %s rerun %d", c.PreviousResult, c.Rerun)
		}
		var after api.Job
		s.do("GET", "/api/v1/jobs/"+j.ID.String(), "").must(t, http.StatusOK, &after)
		if string(after.Result) != "null" && after.Result != nil {
			t.Fatalf("after the claim: result %s, want null", after.Result)
		}
		// New args on a rerun of a running job: refused.
		s.do("POST", "/api/v1/jobs/"+j.ID.String()+"/rerun", `{"args":{"v":8}}`).problem(t, http.StatusConflict, "")
		s.do("POST", "/api/v1/jobs/"+j.ID.String()+"/rerun", `{"args":[1]}`).problem(t, 422, "args")
		s.do("POST", "/api/v1/jobs/"+j.ID.String()+"/rerun", `{"argz":{}}`).problem(t, 400, "argz")
	})
}

func jsonSame(got json.RawMessage, want string) bool {
	var a, b any
	if json.Unmarshal(got, &a) != nil || json.Unmarshal([]byte(want), &b) != nil {
		return false
	}
	return fmt.Sprint(a) == fmt.Sprint(b)
}
