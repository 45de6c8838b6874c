package client_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/store"
)

// TestSchedules: the SDK sets, reads, lists, pauses, resumes, triggers
// and deletes schedules.
func TestSchedules(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		c, _ := serve(t, st, httpapi.Config{}, "", nil)
		ctx := t.Context()
		req := api.ScheduleRequest{Cron: "@every 1h", Job: api.ScheduleJob{Kind: "report", Timeout: api.Duration(time.Minute)}, Overlap: api.OverlapSkip}
		sc, created, err := c.SetSchedule(ctx, "hourly", req)
		if err != nil || !created || sc.Overlap != api.OverlapSkip || time.Duration(sc.Job.Timeout) != time.Minute {
			t.Fatalf("set: %+v %v %v", sc, created, err)
		}
		if _, created, err := c.SetSchedule(ctx, "hourly", req); err != nil || created {
			t.Fatalf("set again: created %v, %v", created, err)
		}
		if list, err := c.Schedules(ctx); err != nil || len(list) != 1 {
			t.Fatalf("list: %+v %v", list, err)
		}
		if sc, err := c.PauseSchedule(ctx, "hourly"); err != nil || !sc.Paused {
			t.Fatalf("pause: %+v %v", sc, err)
		}
		if sc, err := c.ResumeSchedule(ctx, "hourly"); err != nil || sc.Paused {
			t.Fatalf("resume: %+v %v", sc, err)
		}
		j, created, err := c.TriggerSchedule(ctx, "hourly", "t1")
		if err != nil || !created || j.Schedule != "hourly" {
			t.Fatalf("trigger: %+v %v %v", j, created, err)
		}
		if again, created, err := c.TriggerSchedule(ctx, "hourly", "t1"); err != nil || created || again.ID != j.ID {
			t.Fatalf("trigger again: %+v %v %v", again, created, err)
		}
		if sc, err := c.Schedule(ctx, "hourly"); err != nil || sc.LastJobID == nil || *sc.LastJobID != j.ID {
			t.Fatalf("get: %+v %v", sc, err)
		}
		if err := c.DeleteSchedule(ctx, "hourly"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Schedule(ctx, "hourly"); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("get after delete: %v", err)
		}
	})
}

// TestRerun: the SDK re-runs a finished job, with new args or its own.
func TestRerun(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		c, _ := serve(t, st, httpapi.Config{}, "", nil)
		ctx := t.Context()
		j, _, err := c.Submit(ctx, api.SubmitRequest{Queue: "q", Kind: "k", Args: []byte(`{"v":1}`)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Rerun(ctx, j.ID, nil); !errors.Is(err, client.ErrConflict) {
			t.Fatalf("rerun of a queued job: %v", err)
		}
		finish(t, st, claim(t, st, "q"), store.OutcomeSucceeded, `"done"`)
		got, err := c.Rerun(ctx, j.ID, []byte(`{"v":2}`))
		if err != nil || got.State != api.StateQueued || got.Rerun != 1 || string(got.Result) != `"done"` || string(got.Args) != `{"v": 2}` && string(got.Args) != `{"v":2}` {
			t.Fatalf("rerun: %+v %v", got, err)
		}
	})
}
