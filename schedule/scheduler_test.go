package schedule_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/internal/testutil/pgtest"
	"github.com/jobd/jobd/internal/testutil/pgtest/migrated"
	"github.com/jobd/jobd/internal/testutil/teststore"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/schedule"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/postgres"
	"github.com/jobd/jobd/store/sqlite"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var discard = slog.New(slog.DiscardHandler)

// start is the fake clock's start: a whole minute, as ticks are.
var start = time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)

// fixture is a store of one driver on a fake clock, and a scheduler on it.
type fixture struct {
	st  store.Store
	clk *clock.Fake
	sch *schedule.Scheduler
}

// eachStore runs fn, in parallel, on a fresh migrated store of each
// driver whose clock is a fake one at start.
func eachStore(t *testing.T, fn func(t *testing.T, f *fixture)) {
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			clk := clock.NewFake(start)
			var (
				st  store.Store
				err error
			)
			if driver == "sqlite" {
				st, err = sqlite.Open(t.Context(), teststore.SQLitePath(t), sqlite.Options{Clock: clk})
			} else {
				st, err = postgres.Open(t.Context(), migrated.NewDatabase(t), postgres.Options{Clock: clk, Logger: discard})
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			if err := st.Migrate(t.Context()); err != nil {
				t.Fatal(err)
			}
			fn(t, &fixture{st: st, clk: clk, sch: newScheduler(t, st, clk)})
		})
	}
}

func newScheduler(t *testing.T, st store.Store, clk clock.Clock) *schedule.Scheduler {
	t.Helper()
	s, err := schedule.New(schedule.Config{Store: st, Clock: clk, Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (f *fixture) put(t *testing.T, d schedule.Definition) *store.Schedule {
	t.Helper()
	sc, _, err := f.sch.Put(t.Context(), d)
	if err != nil {
		t.Fatalf("Put %q: %v", d.Name, err)
	}
	return sc
}

func (f *fixture) tick(t *testing.T) int {
	t.Helper()
	n, err := f.sch.Tick(t.Context())
	if err != nil {
		t.Fatalf("Tick: %v", err)
	}
	return n
}

func (f *fixture) get(t *testing.T, name string) *store.Schedule {
	t.Helper()
	sc, err := f.st.ScheduleGet(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// jobsOf returns the jobs of a schedule, oldest first.
func (f *fixture) jobsOf(t *testing.T, name string) []*job.Job {
	t.Helper()
	res, err := f.st.JobList(t.Context(), store.ListParams{OldestFirst: true, Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	var out []*job.Job
	for _, j := range res.Jobs {
		if j.Schedule == name {
			out = append(out, j)
		}
	}
	return out
}

// wantTickJobs requires the schedule's jobs to be exactly one per tick
// of ticks, in order, each with its tick's key and scheduled_for.
func wantTickJobs(t *testing.T, jobs []*job.Job, name string, ticks ...time.Time) {
	t.Helper()
	if len(jobs) != len(ticks) {
		t.Fatalf("%d jobs of %q, want %d (ticks %v)", len(jobs), name, len(ticks), ticks)
	}
	for i, j := range jobs {
		if j.ScheduledFor == nil || !j.ScheduledFor.Equal(ticks[i]) || j.IdempotencyKey != schedule.TickKey(name, ticks[i]) {
			t.Fatalf("job %d of %q: scheduled for %v key %q, want %s", i, name, j.ScheduledFor, j.IdempotencyKey, ticks[i])
		}
	}
}

func every(name, spec, catchUp string) schedule.Definition {
	return schedule.Definition{Name: name, Cron: spec, CatchUp: catchUp,
		Job: schedule.Template{Kind: "report", Args: json.RawMessage(`{"n":1}`)}}
}

// TestTickOncePerTick: each tick of a schedule makes one job, with its
// tick's key and time, however many tickers run at once on the store.
func TestTickOncePerTick(t *testing.T) {
	eachStore(t, func(t *testing.T, f *fixture) {
		sc := f.put(t, every("s", "@every 1s", schedule.CatchUpAll))
		first := sc.NextRunAt
		if !first.Equal(start.Add(time.Second)) {
			t.Fatalf("first tick %v, want %v", first, start.Add(time.Second))
		}
		if n := f.tick(t); n != 0 {
			t.Fatalf("a pass before the first tick inserted %d", n)
		}
		others := []*schedule.Scheduler{newScheduler(t, f.st, f.clk), newScheduler(t, f.st, f.clk), f.sch}
		var ticks []time.Time
		for i := range 5 {
			f.clk.Advance(time.Second)
			ticks = append(ticks, first.Add(time.Duration(i)*time.Second))
			var wg sync.WaitGroup
			for _, o := range others {
				wg.Go(func() {
					if _, err := o.Tick(context.Background()); err != nil {
						t.Errorf("Tick: %v", err)
					}
				})
			}
			wg.Wait()
		}
		wantTickJobs(t, f.jobsOf(t, "s"), "s", ticks...)
		got := f.get(t, "s")
		if !got.NextRunAt.Equal(f.clk.Now().Add(time.Second)) || !got.LastRunAt.Equal(ticks[4]) {
			t.Fatalf("after the passes: next %v last run %v", got.NextRunAt, got.LastRunAt)
		}
		if last := f.jobsOf(t, "s")[4]; got.LastJobID != last.ID || last.Kind != "report" || string(last.Args) != `{"n": 1}` && string(last.Args) != `{"n":1}` {
			t.Fatalf("last job %+v, the schedule's %s", last, got.LastJobID)
		}
	})
}

// TestCatchUp: after 50 minutes without a ticker, "none" runs nothing
// (unless the latest tick is less than Grace late), "one" runs the latest
// tick, "all" every tick up to its limit; each then waits for its next
// tick after now.
func TestCatchUp(t *testing.T) {
	eachStore(t, func(t *testing.T, f *fixture) {
		for _, c := range []string{schedule.CatchUpNone, schedule.CatchUpOne, schedule.CatchUpAll} {
			d := every(c, "@every 5m", c)
			d.CatchUpLimit = 4
			f.put(t, d)
		}
		f.clk.Advance(51*time.Minute + 30*time.Second) // ticks at 5m…50m are due, the latest 90s late
		f.tick(t)
		at := func(m int) time.Time { return start.Add(time.Duration(m) * time.Minute) }
		wantTickJobs(t, f.jobsOf(t, "none"), "none")
		wantTickJobs(t, f.jobsOf(t, "one"), "one", at(50))
		wantTickJobs(t, f.jobsOf(t, "all"), "all", at(35), at(40), at(45), at(50))
		for _, c := range []string{"none", "one", "all"} {
			if next := f.get(t, c).NextRunAt; !next.Equal(at(55)) {
				t.Fatalf("%s: next run %v, want %v", c, next, at(55))
			}
		}
		// On time (10s late): "none" runs the tick too.
		f.clk.Advance(3*time.Minute + 40*time.Second)
		f.tick(t)
		wantTickJobs(t, f.jobsOf(t, "none"), "none", at(55))
	})
}

// TestOverlapSkip: while the schedule's last job is queued or running,
// its ticks pass without a job; once it is final, the next tick runs.
func TestOverlapSkip(t *testing.T) {
	eachStore(t, func(t *testing.T, f *fixture) {
		d := every("s", "@every 1m", schedule.CatchUpAll)
		d.Overlap = schedule.OverlapSkip
		f.put(t, d)
		f.clk.Advance(time.Minute)
		f.tick(t)
		f.clk.Advance(time.Minute)
		f.tick(t) // skipped: the first job is queued
		jobs := f.jobsOf(t, "s")
		wantTickJobs(t, jobs, "s", start.Add(time.Minute))
		claimed, err := f.st.JobClaim(t.Context(), store.ClaimParams{Queue: job.DefaultQueue, Max: 1, Owner: "w"})
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claim: %v %v", claimed, err)
		}
		f.clk.Advance(time.Minute)
		f.tick(t) // skipped: it runs
		if _, err := f.st.JobFinish(t.Context(), []store.Outcome{{Lease: store.LeaseOf(claimed[0]), Outcome: job.Outcome{Status: store.OutcomeSucceeded}}}); err != nil {
			t.Fatal(err)
		}
		f.clk.Advance(2 * time.Minute) // two ticks due: skip runs one job at a time
		f.tick(t)
		wantTickJobs(t, f.jobsOf(t, "s"), "s", start.Add(time.Minute), start.Add(5*time.Minute))
	})
}

// TestPauseResume: a paused schedule's ticks do not run, even once it is
// resumed; it starts again at its first tick after the resume; a trigger
// runs while it is paused.
func TestPauseResume(t *testing.T) {
	eachStore(t, func(t *testing.T, f *fixture) {
		f.put(t, every("s", "@every 1m", schedule.CatchUpAll))
		if _, err := f.sch.Pause(t.Context(), "s"); err != nil {
			t.Fatal(err)
		}
		f.clk.Advance(5*time.Minute + 30*time.Second)
		if n := f.tick(t); n != 0 {
			t.Fatalf("a paused schedule inserted %d jobs", n)
		}
		res, err := f.sch.Trigger(t.Context(), "s", "")
		if err != nil || !res.Created {
			t.Fatalf("trigger while paused: %+v %v", res, err)
		}
		sc, err := f.sch.Resume(t.Context(), "s")
		if err != nil {
			t.Fatal(err)
		}
		if sc.Paused || !sc.NextRunAt.Equal(start.Add(6*time.Minute)) {
			t.Fatalf("resumed: paused %v next %v, want the tick after now, %v", sc.Paused, sc.NextRunAt, start.Add(6*time.Minute))
		}
		f.tick(t)
		f.clk.Advance(30 * time.Second)
		f.tick(t)
		jobs := f.jobsOf(t, "s")
		if len(jobs) != 2 || jobs[0].ID != res.Job.ID || !jobs[1].ScheduledFor.Equal(start.Add(6*time.Minute)) {
			t.Fatalf("jobs %v, want the trigger's and the 6m tick's", jobs)
		}
	})
}

// TestConfigPrecedence: the configuration's schedules replace the API's
// of their names at every start, the API cannot replace them, and a
// restart with the same spec keeps the next run.
func TestConfigPrecedence(t *testing.T) {
	eachStore(t, func(t *testing.T, f *fixture) {
		f.put(t, every("nightly", "0 3 * * *", ""))
		cfg := every("nightly", "0 4 * * *", "")
		cfg.Job.Kind = "config-report"
		if err := f.sch.ApplyConfig(t.Context(), []schedule.Definition{cfg}); err != nil {
			t.Fatal(err)
		}
		sc := f.get(t, "nightly")
		if sc.Source != store.ScheduleSourceConfig || sc.Cron != "0 4 * * *" || !sc.NextRunAt.Equal(time.Date(2026, 6, 2, 4, 0, 0, 0, time.UTC)) {
			t.Fatalf("after the config: %+v", sc)
		}
		_, _, err := f.sch.Put(t.Context(), every("nightly", "0 5 * * *", ""))
		if !errors.Is(err, store.ErrScheduleConfigured) {
			t.Fatalf("API put over the config: %v, want ErrScheduleConfigured", err)
		}
		if _, err := f.sch.Pause(t.Context(), "nightly"); err != nil {
			t.Fatalf("pause of a configured schedule: %v", err)
		}
		f.clk.Advance(time.Hour)
		if err := f.sch.ApplyConfig(t.Context(), []schedule.Definition{cfg}); err != nil { // a restart
			t.Fatal(err)
		}
		again := f.get(t, "nightly")
		if !again.NextRunAt.Equal(sc.NextRunAt) || !again.Paused || again.Cron != "0 4 * * *" {
			t.Fatalf("after a restart: %+v, want the next run and the pause kept", again)
		}
	})
}

// TestTrigger: a trigger inserts one job now and makes it the last job;
// the same Idempotency-Key answers that job again.
func TestTrigger(t *testing.T) {
	eachStore(t, func(t *testing.T, f *fixture) {
		f.put(t, every("s", "@daily", ""))
		f.clk.Advance(90 * time.Second)
		res, err := f.sch.Trigger(t.Context(), "s", "k1")
		if err != nil || !res.Created || res.Job.ScheduledFor == nil || !res.Job.ScheduledFor.Equal(f.clk.Now()) ||
			res.Job.Schedule != "s" || !res.Job.RunAt.Equal(f.clk.Now()) {
			t.Fatalf("trigger: %+v %v", res, err)
		}
		again, err := f.sch.Trigger(t.Context(), "s", "k1")
		if err != nil || again.Created || again.Job.ID != res.Job.ID {
			t.Fatalf("trigger with the same key: %+v %v, want the first job", again, err)
		}
		if sc := f.get(t, "s"); sc.LastJobID != res.Job.ID {
			t.Fatalf("last job %s, want the trigger's", sc.LastJobID)
		}
		if _, err := f.sch.Trigger(t.Context(), "nope", ""); !errors.Is(err, job.ErrNotFound) {
			t.Fatalf("trigger of an unknown schedule: %v", err)
		}
	})
}

// TestTickerDST: a daily 02:30 in Europe/Berlin, ticked hour by hour on
// an injected clock over both transitions of 2026: none on the day of
// the spring-forward gap, two on the day 02:30 repeats.
func TestTickerDST(t *testing.T) {
	eachStore(t, func(t *testing.T, f *fixture) {
		for _, c := range []struct {
			from  time.Time
			hours int
			want  []time.Time
		}{
			{time.Date(2026, 3, 27, 12, 0, 0, 0, time.UTC), 72, []time.Time{
				time.Date(2026, 3, 28, 1, 30, 0, 0, time.UTC), time.Date(2026, 3, 30, 0, 30, 0, 0, time.UTC)}},
			{time.Date(2026, 10, 24, 12, 0, 0, 0, time.UTC), 48, []time.Time{
				time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC), time.Date(2026, 10, 25, 1, 30, 0, 0, time.UTC),
				time.Date(2026, 10, 26, 1, 30, 0, 0, time.UTC)}},
		} {
			f.clk.Advance(c.from.Sub(f.clk.Now()))
			name := "berlin-" + c.from.Format("01")
			f.put(t, schedule.Definition{Name: name, Cron: "30 2 * * *", Timezone: "Europe/Berlin", CatchUp: schedule.CatchUpAll,
				Job: schedule.Template{Kind: "k"}})
			for range c.hours {
				f.clk.Advance(time.Hour)
				f.tick(t)
			}
			wantTickJobs(t, f.jobsOf(t, name), name, c.want...)
		}
	})
}

// TestPutChecks: a definition that breaks a rule is refused naming its
// field, and nothing is stored.
func TestPutChecks(t *testing.T) {
	eachStore(t, func(t *testing.T, f *fixture) {
		for _, c := range []struct {
			field string
			edit  func(d *schedule.Definition)
		}{
			{"name", func(d *schedule.Definition) { d.Name = "" }},
			{"cron", func(d *schedule.Definition) { d.Cron = "every day" }},
			{"timezone", func(d *schedule.Definition) { d.Timezone = "Nowhere/Else" }},
			{"overlap", func(d *schedule.Definition) { d.Overlap = "queue" }},
			{"catch_up", func(d *schedule.Definition) { d.CatchUp = "some" }},
			{"catch_up_limit", func(d *schedule.Definition) { d.CatchUpLimit = -1 }},
			{"job.kind", func(d *schedule.Definition) { d.Job.Kind = "" }},
			{"job.args", func(d *schedule.Definition) { d.Job.Args = json.RawMessage(`[1]`) }},
			{"job.max_attempts", func(d *schedule.Definition) { d.Job.MaxAttempts = -2 }},
			{"job.timeout", func(d *schedule.Definition) { d.Job.Timeout = schedule.Duration(time.Millisecond) }},
		} {
			d := every("s", "@hourly", "")
			c.edit(&d)
			_, _, err := f.sch.Put(t.Context(), d)
			var verr *job.ValidationError
			if !errors.As(err, &verr) || verr.Field != c.field {
				t.Fatalf("Put with a bad %s: %v", c.field, err)
			}
		}
		if list, _ := f.st.ScheduleList(t.Context()); len(list) != 0 {
			t.Fatalf("schedules stored: %v", list)
		}
	})
}
