package schedule_test

import (
	"testing"
	"time"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/schedule"
)

// TestLatePass: a pass that comes after two ticks fell due (the ticker's
// period is the schedule's, and a pass takes time) runs both, whatever
// the rule: a tick less than Grace late is on time.
func TestLatePass(t *testing.T) {
	eachStore(t, func(t *testing.T, f *fixture) {
		for _, c := range []string{schedule.CatchUpNone, schedule.CatchUpOne, schedule.CatchUpAll} {
			d := every(c, "@every 1s", c)
			d.CatchUpLimit = 1
			f.put(t, d)
		}
		f.clk.Advance(2*time.Second + 10*time.Millisecond)
		f.tick(t)
		for _, c := range []string{"none", "one", "all"} {
			wantTickJobs(t, f.jobsOf(t, c), c, start.Add(time.Second), start.Add(2*time.Second))
		}
	})
}

// TestHandOverTicks: the ticks that fell due during a hand-over (this
// node in contact with the database, not leading: engine.Term) run
// late, once each, whatever the rule, even past Grace; the ticks before
// the node's contact began are missed ones, which the rule decides.
func TestHandOverTicks(t *testing.T) {
	eachStore(t, func(t *testing.T, f *fixture) {
		for _, c := range []string{schedule.CatchUpNone, schedule.CatchUpOne} {
			f.put(t, every(c, "@every 1m", c))
		}
		at := func(m int) time.Time { return start.Add(time.Duration(m) * time.Minute) }
		// Ticks 1m…5m are due, 5m is 30s late: contact began at 2m30s, the
		// term at now.
		f.clk.Advance(5*time.Minute + 30*time.Second)
		ctx := engine.WithTerm(t.Context(), engine.Term{Began: f.clk.Now(), ContactSince: start.Add(150 * time.Second)})
		if _, err := f.sch.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		wantTickJobs(t, f.jobsOf(t, "none"), "none", at(3), at(4), at(5))
		wantTickJobs(t, f.jobsOf(t, "one"), "one", at(3), at(4), at(5))
		for _, c := range []string{"none", "one"} {
			if next := f.get(t, c).NextRunAt; !next.Equal(at(6)) {
				t.Fatalf("%s: next run %v, want %v", c, next, at(6))
			}
		}
	})
}
