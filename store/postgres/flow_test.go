package postgres

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/store/storetest"
)

// TestRateArithmetic: the rate arithmetic of the limited claim
// (jobd_rate_interval, jobd_rate_room and jobd_rate_next, migration 009)
// gives flow.Allowance's results, its theoretical arrival time rounded up
// to the microsecond a timestamptz keeps, for rates whose interval is and
// is not a whole number of microseconds, tats passed, now and ahead.
func TestRateArithmetic(t *testing.T) {
	t.Parallel()
	s := openStore(t, migratedDatabase(t), clock.Real)
	now := time.Date(2031, time.March, 4, 5, 6, 7, 123456000, time.UTC)
	rates := []flow.Rate{
		{Limit: 20, Period: time.Second},
		{Limit: 10, Period: time.Second, Burst: 5},
		{Limit: 3, Period: time.Millisecond},                                 // 333 333 ns apart
		{Limit: 7, Period: time.Second, Burst: 7},                            // 142 857 142 ns apart
		{Limit: flow.MaxLimit, Period: time.Millisecond},                     // 1 ns apart
		{Limit: 1, Period: flow.MaxPeriod, Burst: 1},                         // a week apart
		{Limit: flow.MaxLimit, Period: flow.MaxPeriod, Burst: flow.MaxLimit}, // the most bursts * interval
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, r := range rates {
		if err := (flow.Limits{Rate: &r}).Check(); err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		var interval int64
		if err := s.pool.QueryRow(t.Context(), "SELECT jobd_rate_interval($1, $2)", r.Period, r.Limit).Scan(&interval); err != nil {
			t.Fatal(err)
		}
		if interval != int64(r.Interval()) {
			t.Fatalf("%+v: interval %d ns, want %d", r, interval, r.Interval())
		}
		span := time.Duration(r.Bursts()) * r.Interval()
		tats := []time.Time{{}, now.Add(-time.Hour), now, now.Add(time.Microsecond), now.Add(span / 2).Truncate(time.Microsecond),
			now.Add(span - r.Interval()).Truncate(time.Microsecond), now.Add(span).Truncate(time.Microsecond)}
		for range 20 {
			tats = append(tats, now.Add(time.Duration(rng.Int64N(int64(span)+1))).Truncate(time.Microsecond))
		}
		for _, tat := range tats {
			for _, want := range []int{1, 2, 5, 1000, math.MaxInt32} {
				n, next := flow.Allowance(r, tat, now, want)
				var tatArg *time.Time
				if !tat.IsZero() {
					tatArg = &tat
				}
				var (
					gotN    int
					gotNext time.Time
				)
				err := s.pool.QueryRow(t.Context(), `
					SELECT n, jobd_rate_next($1, $3, $4, n)
					FROM (SELECT least(jobd_rate_room($1, $2, $3, $4), $5) AS n) x`,
					interval, r.Bursts(), tatArg, now, want).Scan(&gotN, &gotNext)
				if err != nil {
					t.Fatal(err)
				}
				wantNext := next.Truncate(time.Microsecond)
				if !wantNext.Equal(next) {
					wantNext = wantNext.Add(time.Microsecond)
				}
				if gotN != n || !gotNext.Equal(wantNext) {
					t.Fatalf("%+v, tat %v, now %v, want %d: SQL gives %d starts and tat %v, flow.Allowance %d and %v (rounded up %v)",
						r, tat, now, want, gotN, gotNext, n, next, wantNext)
				}
			}
		}
	}
}

// TestClaimRulesShared: claim_limited.sql states the lock_key and
// capability rules of claim.sql word for word.
func TestClaimRulesShared(t *testing.T) {
	for _, rule := range []struct{ from, to string }{
		{"      -- A job whose lock_key", "            OFFSET 0))\n"},
		{"      -- Capability rules.", "                  AND w.id IS DISTINCT FROM $6::text))\n"},
	} {
		i := strings.Index(claimSQL, rule.from)
		j := strings.Index(claimSQL[i:], rule.to)
		if i < 0 || j < 0 {
			t.Fatalf("claim.sql lacks the rule from %q to %q", rule.from, rule.to)
		}
		text := claimSQL[i : i+j+len(rule.to)]
		if !strings.Contains(claimLimitedSQL, text) {
			t.Errorf("claim_limited.sql lacks claim.sql's rule:\n%s", text)
		}
	}
}

// TestFlowStatePruned: see storetest.FlowStatePruned.
func TestFlowStatePruned(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2031, time.March, 4, 5, 6, 7, 0, time.UTC))
	s := openStore(t, migratedDatabase(t), clk)
	storetest.FlowStatePruned(t, s, clk, func() int {
		var n int
		if err := s.pool.QueryRow(t.Context(), "SELECT count(*) FROM jobd_queue_partitions").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	})
}
