package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var scheduleTests = []test{
	{"PutGetList", testSchedulePutGetList},
	{"Replace", testScheduleReplace},
	{"ConfigWins", testScheduleConfigWins},
	{"Delete", testScheduleDelete},
	{"Pause", testSchedulePause},
	{"Due", testScheduleDue},
	{"AdvanceFenced", testScheduleAdvanceFenced},
	{"TickInTx", testScheduleTickInTx},
	{"BadInput", testScheduleBadInput},
}

// newSchedule is a schedule of the API, due at next.
func newSchedule(name string, next time.Time) store.Schedule {
	return store.Schedule{Name: name, Cron: "@every 1m", Timezone: "UTC", Template: json.RawMessage(`{"kind":"k"}`),
		Overlap: "allow", CatchUp: "none", CatchUpLimit: 100, Source: store.ScheduleSourceAPI, NextRunAt: next}
}

func (e *env) putSchedule(t *testing.T, s store.Schedule) *store.Schedule {
	t.Helper()
	got, err := e.s.SchedulePut(t.Context(), s)
	if err != nil {
		t.Fatalf("SchedulePut %q: %v", s.Name, err)
	}
	return got
}

func (e *env) getSchedule(t *testing.T, name string) *store.Schedule {
	t.Helper()
	got, err := e.s.ScheduleGet(t.Context(), name)
	if err != nil {
		t.Fatalf("ScheduleGet %q: %v", name, err)
	}
	return got
}

// wantSchedule compares the definition and state of two schedules.
func wantSchedule(t *testing.T, what string, got *store.Schedule, want store.Schedule) {
	t.Helper()
	if got.Name != want.Name || got.Cron != want.Cron || got.Timezone != want.Timezone || !jsonEqual(got.Template, want.Template) ||
		got.Overlap != want.Overlap || got.CatchUp != want.CatchUp || got.CatchUpLimit != want.CatchUpLimit ||
		got.Paused != want.Paused || got.Source != want.Source || !got.NextRunAt.Equal(want.NextRunAt) ||
		!timePtrEqual(got.LastRunAt, want.LastRunAt) || got.LastJobID != want.LastJobID {
		t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func testSchedulePutGetList(t *testing.T, e *env) {
	b := newSchedule("b", e.now().Add(time.Minute))
	a := newSchedule("a", e.now().Add(time.Hour))
	a.Cron, a.Timezone, a.Overlap, a.CatchUp, a.CatchUpLimit = "0 3 * * *", "Europe/Berlin", "skip", "all", 5
	a.Template = json.RawMessage(`{"kind":"nightly","args":{"deep":true},"priority":3}`)
	for _, s := range []store.Schedule{b, a} {
		got := e.putSchedule(t, s)
		wantSchedule(t, "put "+s.Name, got, s)
		wantTime(t, "created_at", got.CreatedAt, e.now())
		wantTime(t, "updated_at", got.UpdatedAt, e.now())
		wantSchedule(t, "get "+s.Name, e.getSchedule(t, s.Name), s)
	}
	list, err := e.s.ScheduleList(t.Context())
	if err != nil || len(list) != 2 {
		t.Fatalf("ScheduleList: %d schedules, %v", len(list), err)
	}
	wantSchedule(t, "list[0]", &list[0], a)
	wantSchedule(t, "list[1]", &list[1], b)
	_, err = e.s.ScheduleGet(t.Context(), "nope")
	wantErr(t, "ScheduleGet of an unknown name", err, job.ErrNotFound)
}

// testScheduleReplace: a put replaces the definition and the next run,
// keeping the paused flag, the last run and created_at.
func testScheduleReplace(t *testing.T, e *env) {
	s := newSchedule("s", e.now().Add(time.Minute))
	first := e.putSchedule(t, s)
	if _, err := e.s.ScheduleSetPaused(t.Context(), "s", true, time.Time{}); err != nil {
		t.Fatal(err)
	}
	last := uuid.Must(uuid.NewV7())
	if ok, err := e.s.ScheduleAdvance(t.Context(), store.ScheduleAdvance{Name: "s", LastJobID: last, LastRunAt: e.now()}); !ok || err != nil {
		t.Fatalf("ScheduleAdvance: %v %v", ok, err)
	}
	e.clk.Advance(time.Second)
	s.Cron, s.NextRunAt = "@every 5m", e.now().Add(5*time.Minute)
	got := e.putSchedule(t, s)
	want := s
	want.Paused, want.LastJobID = true, last
	lastRun := e.now().Add(-time.Second)
	want.LastRunAt = &lastRun
	wantSchedule(t, "replaced", got, want)
	wantTime(t, "created_at kept", got.CreatedAt, first.CreatedAt)
	wantTime(t, "updated_at", got.UpdatedAt, e.now())
}

// testScheduleConfigWins: the API cannot replace a schedule of the
// configuration; the configuration replaces both kinds.
func testScheduleConfigWins(t *testing.T, e *env) {
	api := newSchedule("s", e.now().Add(time.Minute))
	e.putSchedule(t, api)
	cfg := api
	cfg.Source, cfg.Cron = store.ScheduleSourceConfig, "@every 2m"
	wantSchedule(t, "config over api", e.putSchedule(t, cfg), cfg)
	_, err := e.s.SchedulePut(t.Context(), api)
	wantErr(t, "an API put over the configuration's", err, store.ErrScheduleConfigured)
	wantSchedule(t, "unchanged", e.getSchedule(t, "s"), cfg)
	cfg.Cron = "@every 3m"
	wantSchedule(t, "config over config", e.putSchedule(t, cfg), cfg)
}

func testScheduleDelete(t *testing.T, e *env) {
	e.putSchedule(t, newSchedule("s", e.now()))
	if err := e.s.ScheduleDelete(t.Context(), "s"); err != nil {
		t.Fatal(err)
	}
	_, err := e.s.ScheduleGet(t.Context(), "s")
	wantErr(t, "ScheduleGet after delete", err, job.ErrNotFound)
	wantErr(t, "ScheduleDelete again", e.s.ScheduleDelete(t.Context(), "s"), job.ErrNotFound)
}

func testSchedulePause(t *testing.T, e *env) {
	s := newSchedule("s", e.now())
	e.putSchedule(t, s)
	got, err := e.s.ScheduleSetPaused(t.Context(), "s", true, time.Time{})
	if err != nil || !got.Paused || !got.NextRunAt.Equal(s.NextRunAt) {
		t.Fatalf("pause: %+v %v", got, err)
	}
	next := e.now().Add(time.Hour)
	got, err = e.s.ScheduleSetPaused(t.Context(), "s", false, next)
	if err != nil || got.Paused || !got.NextRunAt.Equal(next) {
		t.Fatalf("resume: %+v %v", got, err)
	}
	_, err = e.s.ScheduleSetPaused(t.Context(), "nope", true, time.Time{})
	wantErr(t, "pause of an unknown schedule", err, job.ErrNotFound)
}

func testScheduleDue(t *testing.T, e *env) {
	for i, name := range []string{"late", "now", "later", "paused"} {
		e.putSchedule(t, newSchedule(name, e.now().Add(time.Duration(i-1)*time.Minute)))
	}
	if _, err := e.s.ScheduleSetPaused(t.Context(), "paused", true, time.Time{}); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(time.Minute) // "paused" falls due, but is paused
	due, err := e.s.ScheduleDue(t.Context(), e.now().Add(-time.Minute), 10)
	if err != nil || len(due) != 2 || due[0].Name != "late" || due[1].Name != "now" {
		t.Fatalf("ScheduleDue: %+v %v, want late and now", due, err)
	}
	if due, _ := e.s.ScheduleDue(t.Context(), e.now(), 1); len(due) != 1 || due[0].Name != "late" {
		t.Fatalf("ScheduleDue limit 1: %+v", due)
	}
}

// testScheduleAdvanceFenced: an advance fenced by a next_run_at that is
// no longer the row's changes nothing.
func testScheduleAdvanceFenced(t *testing.T, e *env) {
	s := newSchedule("s", e.now())
	e.putSchedule(t, s)
	job1, job2 := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	next := s.NextRunAt.Add(time.Minute)
	ok, err := e.s.ScheduleAdvance(t.Context(), store.ScheduleAdvance{Name: "s", From: s.NextRunAt, Next: next, LastJobID: job1, LastRunAt: s.NextRunAt})
	if !ok || err != nil {
		t.Fatalf("first advance: %v %v", ok, err)
	}
	ok, err = e.s.ScheduleAdvance(t.Context(), store.ScheduleAdvance{Name: "s", From: s.NextRunAt, Next: next.Add(time.Minute), LastJobID: job2, LastRunAt: next})
	if ok || err != nil {
		t.Fatalf("second advance from the same next run: %v %v, want false", ok, err)
	}
	got := e.getSchedule(t, "s")
	if !got.NextRunAt.Equal(next) || got.LastJobID != job1 || !timePtrEqual(got.LastRunAt, &s.NextRunAt) {
		t.Fatalf("after the fenced advance: %+v", got)
	}
	if ok, _ := e.s.ScheduleAdvance(t.Context(), store.ScheduleAdvance{Name: "gone", Next: next}); ok {
		t.Fatal("advance of an unknown schedule reported true")
	}
}

// testScheduleTickInTx: a tick's jobs and its advance commit together,
// or, when the fence fails and the caller rolls back, not at all.
func testScheduleTickInTx(t *testing.T, e *env) {
	s := newSchedule("s", e.now())
	e.putSchedule(t, s)
	errMoved := errors.New("moved")
	tick := func(from time.Time, key string) error {
		return e.s.InTx(t.Context(), func(ctx context.Context, ex store.Executor) error {
			cur, err := ex.ScheduleLock(ctx, "s")
			if err != nil {
				return err
			}
			res, err := ex.JobInsertMany(ctx, []job.InsertParams{{Kind: "k", IdempotencyKey: key, Schedule: "s", ScheduledFor: from}})
			if err != nil {
				return err
			}
			ok, err := ex.ScheduleAdvance(ctx, store.ScheduleAdvance{Name: cur.Name, From: from, Next: from.Add(time.Minute),
				LastJobID: res[0].Job.ID, LastRunAt: from})
			if err != nil {
				return err
			}
			if !ok {
				return errMoved
			}
			return nil
		})
	}
	if err := tick(s.NextRunAt, "schedule:s:1"); err != nil {
		t.Fatal(err)
	}
	err := tick(s.NextRunAt, "schedule:s:1-again")
	wantErr(t, "a second tick from the same next run", err, errMoved)
	if n := e.total(t); n != 1 {
		t.Fatalf("%d jobs, want 1: the second tick's rolled back", n)
	}
	j := e.list(t, store.ListParams{Limit: 10}).Jobs[0]
	if j.Schedule != "s" || !timePtrEqual(j.ScheduledFor, &s.NextRunAt) || e.getSchedule(t, "s").LastJobID != j.ID {
		t.Fatalf("the tick's job: schedule %q scheduled for %v; the schedule's last job %s", j.Schedule, j.ScheduledFor, e.getSchedule(t, "s").LastJobID)
	}
}

func testScheduleBadInput(t *testing.T, e *env) {
	good := newSchedule("s", e.now())
	for _, c := range []struct {
		field string
		edit  func(s *store.Schedule)
	}{
		{"name", func(s *store.Schedule) { s.Name = "" }},
		{"name", func(s *store.Schedule) { s.Name = "a\nb" }},
		{"cron", func(s *store.Schedule) { s.Cron = "" }},
		{"timezone", func(s *store.Schedule) { s.Timezone = "UTC\x00" }},
		{"job", func(s *store.Schedule) { s.Template = json.RawMessage(`{"kind":`) }},
		{"next_run_at", func(s *store.Schedule) { s.NextRunAt = time.Time{} }},
		{"source", func(s *store.Schedule) { s.Source = "other" }},
	} {
		s := good
		c.edit(&s)
		_, err := e.s.SchedulePut(t.Context(), s)
		var verr *job.ValidationError
		if !errors.As(err, &verr) || verr.Field != c.field {
			t.Fatalf("SchedulePut with a bad %s: %v", c.field, err)
		}
	}
	list, err := e.s.ScheduleList(t.Context())
	if err != nil || len(list) != 0 {
		t.Fatalf("schedules after bad puts: %+v %v", list, err)
	}
}
