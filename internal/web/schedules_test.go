package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestSchedules: each schedule with its next and last run; pause,
// resume and trigger now do what the API's routes do; a trigger form
// sent twice makes one job; a read key sees the page without its
// buttons.
func TestSchedules(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDash(t, st, dashOptions{Secret: secret})
		ctx := context.Background()
		if _, _, err := d.api.SetSchedule(ctx, "nightly report", api.ScheduleRequest{Cron: "0 3 * * *", Timezone: "Europe/Berlin",
			Job: api.ScheduleJob{Kind: "report", Queue: "reports"}, Overlap: "skip"}); err != nil {
			t.Fatal(err)
		}
		b := d.browser()
		b.login(secret)
		p := b.get("/ui/schedules")
		for _, want := range []string{`data-schedule="nightly report"`, "0 3 * * *", "Europe/Berlin", ">report</a>", "queue reports",
			"overlap skip", `data-action="pause"`, `data-action="trigger"`, "<time datetime="} {
			if !strings.Contains(p.body, want) {
				t.Errorf("the schedules page lacks %s", want)
			}
		}
		base := "/ui/schedules/" + url.PathEscape("nightly report")
		if p := b.act("/ui/schedules", base+"/pause", nil); p.status != http.StatusSeeOther {
			t.Fatalf("pause: %d %s", p.status, p.body)
		}
		if sc, _ := st.ScheduleGet(ctx, "nightly report"); !sc.Paused {
			t.Fatal("not paused")
		}
		if p := b.get("/ui/schedules"); !strings.Contains(p.body, `data-action="resume"`) {
			t.Fatal("a paused schedule has no resume button")
		}
		if p := b.act("/ui/schedules", base+"/resume", nil); p.status != http.StatusSeeOther {
			t.Fatalf("resume: %d", p.status)
		}
		if sc, _ := st.ScheduleGet(ctx, "nightly report"); sc.Paused {
			t.Fatal("still paused")
		}

		// Trigger now, twice with the same form: one job, the schedule's.
		key := uuid.NewString()
		var first string
		for i := 0; i < 2; i++ {
			p := b.act("/ui/schedules", base+"/trigger", url.Values{"key": {key}})
			if p.status != http.StatusSeeOther || !strings.HasPrefix(p.location(), "/ui/jobs/") {
				t.Fatalf("trigger %d: %d to %q", i, p.status, p.location())
			}
			id := strings.TrimPrefix(strings.SplitN(p.location(), "?", 2)[0], "/ui/jobs/")
			if i == 0 {
				first = id
			} else if id != first {
				t.Fatalf("the same form triggered jobs %s and %s", first, id)
			}
		}
		j := d.job(first)
		if j.Schedule != "nightly report" || j.Queue != "reports" || j.Kind != "report" {
			t.Fatalf("the triggered job: schedule %q, queue %s, kind %s", j.Schedule, j.Queue, j.Kind)
		}
		if p := b.get("/ui/jobs/" + first); !strings.Contains(p.body, `<a href="/ui/schedules">nightly report</a>`) {
			t.Errorf("the job page does not name its schedule")
		}
		if p := b.get("/ui/schedules"); !strings.Contains(p.body, `<a href="/ui/jobs/`+first+`">its job</a>`) {
			t.Errorf("the schedules page does not link the last job")
		}
		for _, bad := range []struct {
			path string
			form url.Values
			want int
		}{
			{"/ui/schedules/nope/pause", nil, http.StatusNotFound},
			{"/ui/schedules/nope/trigger", url.Values{"key": {uuid.NewString()}}, http.StatusNotFound},
			{base + "/trigger", url.Values{"key": {"not a key"}}, http.StatusBadRequest},
		} {
			if p := b.act("/ui/schedules", bad.path, bad.form); p.status != bad.want {
				t.Errorf("POST %s: %d, want %d", bad.path, p.status, bad.want)
			}
		}

		reader := d.browser()
		reader.login(d.key("viewer", api.ScopeRead).Key)
		p = reader.get("/ui/schedules")
		if p.status != http.StatusOK || !strings.Contains(p.body, `data-schedule="nightly report"`) || strings.Contains(p.body, `class="write`) {
			t.Errorf("a read key's schedules page: %d, with buttons that write: %v", p.status, strings.Contains(p.body, `class="write`))
		}
		if p := reader.act("/ui/schedules", base+"/trigger", url.Values{"key": {uuid.NewString()}}); p.status != http.StatusForbidden {
			t.Errorf("a read key's trigger: %d, want 403", p.status)
		}
	})
}

// TestRerun: a finished job's page offers a re-run, which queues it
// again with its old state and result kept as the previous ones; a
// queued job has none.
func TestRerun(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		d := newDash(t, st, dashOptions{Secret: secret})
		b := d.browser()
		b.login(secret)
		j := d.submit(api.SubmitRequest{Kind: "noop", Queue: "idle"})
		page := "/ui/jobs/" + j.ID.String()
		if p := b.get(page); strings.Contains(p.body, `id="rerun"`) {
			t.Fatal("a queued job's page offers a re-run")
		}
		if p := b.act(page, page+"/rerun", nil); p.status != http.StatusConflict {
			t.Fatalf("re-run of a queued job: %d, want 409", p.status)
		}
		if p := b.act(page, page+"/cancel", nil); p.status != http.StatusSeeOther {
			t.Fatalf("cancel: %d", p.status)
		}
		if p := b.get(page); !strings.Contains(p.body, `id="rerun"`) {
			t.Fatal("a canceled job's page offers no re-run")
		}
		p := b.act(page, page+"/rerun", nil)
		if p.status != http.StatusSeeOther {
			t.Fatalf("re-run: %d %s", p.status, p.body)
		}
		got := d.job(j.ID.String())
		if got.State != job.StateQueued || got.Rerun != 1 || got.PreviousState != job.StateCanceled {
			t.Fatalf("after the re-run: %s, re-run %d, previous %q", got.State, got.Rerun, got.PreviousState)
		}
		p = b.get(p.location())
		for _, want := range []string{"Job queued to run again (re-run 1).", `re-run <b id="job-rerun">1</b>`, "Before the last re-run", `<span class="badge canceled">canceled</span>`} {
			if !strings.Contains(p.body, want) {
				t.Errorf("the re-run job's page lacks %s", want)
			}
		}
	})
}
