package flow

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/jobd/jobd/job"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// TestAllowanceIsSmooth: a rate of 20 per second without a burst allows
// one start every 50 ms, however often it is asked and however many
// starts are wanted: never two at once, never two less than half an
// interval apart, and 600 in 30 s (601 counting the first).
func TestAllowanceIsSmooth(t *testing.T) {
	r := Rate{Limit: 20, Period: time.Second}
	var tat, last time.Time
	total := 0
	for ms := 0; ms < 30_000; ms++ { // asked every millisecond for 30 s
		now := t0.Add(time.Duration(ms) * time.Millisecond)
		n, next := Allowance(r, tat, now, 100)
		if n > 1 {
			t.Fatalf("at %d ms: %d starts at once from a smooth rate", ms, n)
		}
		if n == 1 && !last.IsZero() && now.Sub(last) < r.Interval()/2 {
			t.Fatalf("at %d ms: a start %s after the previous one", ms, now.Sub(last))
		}
		if n == 1 {
			last = now
		}
		total += n
		tat = next
	}
	if total != 601 {
		t.Fatalf("30 s at 20/s allowed %d starts, want 601 (the first, then one each 50 ms)", total)
	}
}

// TestAllowanceKeepsLateStarts: starts that each come up to half an
// interval late keep the rate's schedule, so the rate still reaches its
// limit; a start later than that loses what it missed.
func TestAllowanceKeepsLateStarts(t *testing.T) {
	r := Rate{Limit: 20, Period: time.Second} // one start each 50 ms
	var tat time.Time
	total := 0
	for k := range 600 {
		late := time.Duration(k%25) * time.Millisecond // 0 to 24 ms late
		n, next := Allowance(r, tat, t0.Add(time.Duration(k)*r.Interval()+late), 1)
		total += n
		tat = next
	}
	if total != 600 {
		t.Fatalf("600 asks, each up to 24 ms late: %d starts, want 600", total)
	}
	n, _ := Allowance(r, t0.Add(time.Second), t0.Add(time.Second+r.Interval()), 5)
	if n != 1 {
		t.Fatalf("an ask a whole interval late: %d starts, want 1 (the missed one is lost)", n)
	}
}

// TestAllowanceBurst: after a quiet spell a burst allows that many starts
// at once, then the rate's spacing again.
func TestAllowanceBurst(t *testing.T) {
	r := Rate{Limit: 10, Period: time.Second, Burst: 5}
	n, tat := Allowance(r, time.Time{}, t0, 100)
	if n != 5 {
		t.Fatalf("first burst: %d starts, want 5", n)
	}
	// The burst's schedule began half an interval back (Slack): the
	// next start is due 50 ms after it, and the one after that 100 ms
	// later.
	for _, step := range []struct {
		at   time.Duration
		want int
	}{{49 * time.Millisecond, 0}, {50 * time.Millisecond, 1}, {149 * time.Millisecond, 0}, {150 * time.Millisecond, 1}} {
		n, next := Allowance(r, tat, t0.Add(step.at), 100)
		if n != step.want {
			t.Fatalf("%s after a full burst: %d starts, want %d", step.at, n, step.want)
		}
		tat = next
	}
	if n, _ := Allowance(r, tat, t0.Add(time.Hour), 3); n != 3 {
		t.Fatalf("wanting 3 after a quiet hour: %d starts, want 3", n)
	}
}

func TestCheckNamesTheField(t *testing.T) {
	cases := map[string]Limits{
		"global_limit":    {GlobalLimit: -1},
		"partition_limit": {PartitionLimit: MaxLimit + 1},
		"throttle_by":     {ThrottleBy: "tenant"},
		"rate.limit":      {Rate: &Rate{Limit: 0, Period: time.Second}},
		"rate.period":     {Rate: &Rate{Limit: 1, Period: 0}},
		"rate.by":         {Rate: &Rate{Limit: 1, Period: time.Second, By: "queue"}},
		"rate.burst":      {Rate: &Rate{Limit: 1, Period: time.Second, Burst: -2}},
	}
	// Cases whose field another case names already.
	more := map[string]Limits{
		"rate.period": {Rate: &Rate{Limit: 1, Period: time.Second + time.Nanosecond}},
		"rate.burst":  {Rate: &Rate{Limit: 10, Period: time.Second, Burst: 11}},
	}
	for _, cs := range []map[string]Limits{cases, more} {
		for field, l := range cs {
			var verr *job.ValidationError
			if err := l.Check(); !errors.As(err, &verr) || verr.Field != field {
				t.Errorf("%+v: got %v, want a validation error naming %s", l, err, field)
			}
		}
	}
	ok := Limits{GlobalLimit: 5, PartitionLimit: 2, ThrottleBy: ByPartitionKey,
		Rate: &Rate{Limit: 100, Period: time.Minute, By: ByPartitionKey, Burst: 10}}
	if err := ok.Check(); err != nil {
		t.Fatal(err)
	}
	if (Limits{}).Limited() || !ok.Limited() || !(Limits{ThrottleBy: ByPartitionKey}).Limited() {
		t.Fatal("Limited is wrong")
	}
}

func TestLimitsJSON(t *testing.T) {
	var l Limits
	in := `{"global_limit":5,"partition_limit":2,"rate":{"limit":100,"period":"1m","by":"partition_key","burst":10},"throttle_by":"partition_key"}`
	if err := json.Unmarshal([]byte(in), &l); err != nil {
		t.Fatal(err)
	}
	if l.Rate == nil || l.Rate.Period != time.Minute || l.Rate.Limit != 100 || l.GlobalLimit != 5 {
		t.Fatalf("decoded %+v", l)
	}
	out, _ := json.Marshal(l)
	var back Limits
	if err := json.Unmarshal(out, &back); err != nil || back.Rate.Period != time.Minute || back.String() != l.String() {
		t.Fatalf("round trip %s: %+v, %v", out, back, err)
	}
	var verr *job.ValidationError
	if err := json.Unmarshal([]byte(`{"rate":{"limit":1,"period":"soon"}}`), &l); !errors.As(err, &verr) || verr.Field != "rate.period" {
		t.Fatalf("bad period: %v", err)
	}
}
