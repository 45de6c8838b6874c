package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// flowTests hold the stores to a queue's flow control (flow.Limits) within
// one node: what a claim hands out, and the settings' round trip.
var flowTests = []test{
	{"GlobalLimit", testFlowGlobalLimit},
	{"PartitionLimit", testFlowPartitionLimit},
	{"FullPartitionAtTheHead", testFlowFullPartitionAtTheHead},
	{"GlobalAndPartition", testFlowGlobalAndPartition},
	{"LockKey", testFlowLockKey},
	{"RateSmooth", testFlowRateSmooth},
	{"RateBurst", testFlowRateBurst},
	{"RateByPartition", testFlowRateByPartition},
	{"Settings", testFlowSettings},
	{"Validation", testFlowValidation},
	{"Paused", testFlowPaused},
	{"Wakes", testFlowWakes},
}

const byPartition = flow.ByPartitionKey

func (e *env) setLimits(t *testing.T, queue string, l flow.Limits) {
	t.Helper()
	if err := e.s.QueueSetLimits(t.Context(), queue, l); err != nil {
		t.Fatalf("QueueSetLimits %q %s: %v", queue, l, err)
	}
}

// settingsOf returns queue's settings as QueueSettings lists them; the
// test fails when they are not listed.
func (e *env) settingsOf(t *testing.T, queue string) store.QueueSettings {
	t.Helper()
	all, err := e.s.QueueSettings(t.Context())
	if err != nil {
		t.Fatalf("QueueSettings: %v", err)
	}
	for _, s := range all {
		if s.Name == queue {
			return s
		}
	}
	t.Fatalf("QueueSettings %+v lacks queue %q", all, queue)
	return store.QueueSettings{}
}

// claimFrom claims up to max jobs of queue through s.
func claimFrom(t *testing.T, s store.Store, queue string, max int) []*job.Job {
	t.Helper()
	jobs, err := s.JobClaim(t.Context(), store.ClaimParams{Queue: queue, Max: max, Owner: owner})
	if err != nil {
		t.Fatalf("JobClaim %q: %v", queue, err)
	}
	return jobs
}

// inPartition inserts n jobs of queue in partition key, one call each.
func (e *env) inPartition(t *testing.T, queue, key string, n int) []*job.Job {
	t.Helper()
	return e.insertN(t, n, job.InsertParams{Queue: queue, Kind: "k", PartitionKey: key})
}

func testFlowGlobalLimit(t *testing.T, e *env) {
	const q = "global"
	e.setLimits(t, q, flow.Limits{GlobalLimit: 3})
	jobs := e.insertN(t, 6, job.InsertParams{Queue: q, Kind: "k"})
	got := e.claim(t, q, 10)
	wantIDs(t, "first claim", got, jobs[:3]...)
	e.claimNone(t, q)
	e.succeed(t, got[0])
	wantIDs(t, "claim once one finished", e.claim(t, q, 10), jobs[3])
	e.claimNone(t, q)
	e.succeed(t, got[1])
	e.succeed(t, got[2])
	wantIDs(t, "claim of one with room for two", e.claim(t, q, 1), jobs[4])

	// Other queues are not limited.
	e.insertN(t, 5, job.InsertParams{Queue: "other", Kind: "k"})
	if n := len(e.claim(t, "other", 10)); n != 5 {
		t.Fatalf("claimed %d jobs of an unlimited queue, want 5", n)
	}
	// A limit below what runs starts nothing; none starts everything.
	e.setLimits(t, q, flow.Limits{GlobalLimit: 1})
	e.claimNone(t, q)
	e.setLimits(t, q, flow.Limits{})
	wantIDs(t, "claim once unlimited", e.claim(t, q, 10), jobs[5])
}

// testFlowPartitionLimit: each partition_key runs at most partition_limit
// jobs, and the jobs without one are one partition, "".
func testFlowPartitionLimit(t *testing.T, e *env) {
	const q = "partitioned"
	e.setLimits(t, q, flow.Limits{PartitionLimit: 2})
	a := e.inPartition(t, q, "a", 4)
	b := e.inPartition(t, q, "b", 3)
	none := e.inPartition(t, q, "", 3)
	got := e.claim(t, q, 20)
	wantIDs(t, "first claim", got, a[0], a[1], b[0], b[1], none[0], none[1])
	e.claimNone(t, q)
	e.succeed(t, got[0]) // a[0]
	e.succeed(t, got[4]) // none[0]
	wantIDs(t, "claim once a and \"\" have room", e.claim(t, q, 20), a[2], none[2])
	e.claimNone(t, q)
	for _, j := range []*job.Job{a[1], b[0]} {
		e.succeed(t, e.get(t, j.ID))
	}
	wantIDs(t, "claim once a and b have room", e.claim(t, q, 20), a[3], b[2])
}

// testFlowFullPartitionAtTheHead: a full partition whose jobs fill the
// head of the queue, far more of them than a claim asks for, does not
// hide the jobs of the other partitions behind them.
func testFlowFullPartitionAtTheHead(t *testing.T, e *env) {
	const q = "head"
	e.setLimits(t, q, flow.Limits{PartitionLimit: 2})
	e.inPartition(t, q, "busy", 2)
	if n := len(e.claim(t, q, 10)); n != 2 {
		t.Fatalf("claimed %d, want 2", n)
	}
	params := make([]job.InsertParams, 500)
	for i := range params {
		params[i] = job.InsertParams{Queue: q, Kind: "k", PartitionKey: "busy"}
	}
	e.insertMany(t, params...)
	other := e.insert(t, job.InsertParams{Queue: q, Kind: "k", PartitionKey: "other"})
	wantIDs(t, "claim behind a full partition", e.claim(t, q, 1), other)
}

func testFlowGlobalAndPartition(t *testing.T, e *env) {
	const q = "both"
	e.setLimits(t, q, flow.Limits{GlobalLimit: 3, PartitionLimit: 2})
	a := e.inPartition(t, q, "a", 3)
	b := e.inPartition(t, q, "b", 3)
	got := e.claim(t, q, 10)
	wantIDs(t, "first claim", got, a[0], a[1], b[0])
	e.claimNone(t, q)
	e.succeed(t, got[0])
	wantIDs(t, "claim once a[0] finished", e.claim(t, q, 10), a[2])
	e.succeed(t, got[2])
	wantIDs(t, "claim once b[0] finished", e.claim(t, q, 10), b[1])
}

// testFlowLockKey: a limited claim keeps the lock_key rule: one running
// job per key, across queues, and the best job of a key only.
func testFlowLockKey(t *testing.T, e *env) {
	const q = "locked"
	e.setLimits(t, q, flow.Limits{GlobalLimit: 5, PartitionLimit: 2})
	e.insert(t, job.InsertParams{Queue: "elsewhere", Kind: "k", LockKey: "N"})
	e.claimOne(t, "elsewhere") // holds N
	in := func(key, lock string) *job.Job {
		return e.insert(t, job.InsertParams{Queue: q, Kind: "k", PartitionKey: key, LockKey: lock})
	}
	a1, a2, a3 := in("a", "L"), in("a", "L"), in("a", "")
	b1, _, _ := in("b", "M"), in("b", "M"), in("b", "L")
	c1, c2, _ := in("c", ""), in("c", ""), in("c", "")
	in("d", "N")
	// a2 and b3 wait for L, b's second for M, d for N; c's third for room
	// in c; and the room of the queue is five.
	got := e.claim(t, q, 10)
	wantIDs(t, "first claim", got, a1, a3, b1, c1, c2)
	e.claimNone(t, q)
	e.succeed(t, got[0]) // a1: L is free, a has room for one
	wantIDs(t, "claim once a1 finished", e.claim(t, q, 10), a2)
}

// testFlowRateSmooth: a rate of 20 a second without a burst, asked every
// 10 ms for 30 s (10 s with -short), starts one job every 50 ms: never two
// at once, never two less than half an interval apart (flow.Rate.Slack),
// 601 in all (201), the first, then one each 50 ms, however many are
// asked for (as flow's TestAllowanceIsSmooth, through the store, on its
// clock).
func testFlowRateSmooth(t *testing.T, e *env) {
	const q = "smooth"
	rate := flow.Rate{Limit: 20, Period: time.Second}
	e.setLimits(t, q, flow.Limits{Rate: &rate})
	params := make([]job.InsertParams, 700)
	for i := range params {
		params[i] = job.InsertParams{Queue: q, Kind: "k"}
	}
	e.insertMany(t, params...)
	origin, total := e.now(), 0
	var last time.Time
	asks := 3000
	if testing.Short() {
		asks = 1000
	}
	for k := range asks {
		at := origin.Add(time.Duration(k) * 10 * time.Millisecond)
		e.clk.Advance(at.Sub(e.now()))
		n := len(e.claim(t, q, 100))
		if n > 1 {
			t.Fatalf("at %s: %d starts at once", at.Sub(origin), n)
		}
		if n == 1 && !last.IsZero() && at.Sub(last) < rate.Slack() {
			t.Fatalf("at %s: a start %s after the previous one", at.Sub(origin), at.Sub(last))
		}
		if n == 1 {
			last = at
		}
		total += n
	}
	if want := 1 + asks/5; total != want {
		t.Fatalf("%d s at 20/s allowed %d starts, want %d", asks/100, total, want)
	}
}

// testFlowRateBurst: after a quiet spell a burst allows that many starts
// at once, then the rate's spacing again.
func testFlowRateBurst(t *testing.T, e *env) {
	const q = "bursty"
	e.setLimits(t, q, flow.Limits{Rate: &flow.Rate{Limit: 10, Period: time.Second, Burst: 5}})
	e.insertN(t, 20, job.InsertParams{Queue: q, Kind: "k"})
	for _, step := range []struct {
		advance time.Duration
		max     int
		want    int
	}{
		{0, 100, 5}, // the burst
		{49 * time.Millisecond, 100, 0},
		// The burst's schedule began half an interval back (Slack): one
		// more is due half an interval after it.
		{time.Millisecond, 100, 1},
		{0, 100, 0},
		{time.Hour, 3, 3}, // a quiet hour: a burst again, of which three are asked for
		{0, 100, 2},       // and the rest of it
		{0, 100, 0},
	} {
		e.clk.Advance(step.advance)
		if n := len(e.claim(t, q, step.max)); n != step.want {
			t.Fatalf("after %s, asking %d: %d starts, want %d", step.advance, step.max, n, step.want)
		}
	}
}

// testFlowRateByPartition: a rate by partition_key gives each partition
// (the jobs without one are one) a rate of its own.
func testFlowRateByPartition(t *testing.T, e *env) {
	const q = "per-tenant"
	e.setLimits(t, q, flow.Limits{Rate: &flow.Rate{Limit: 1, Period: time.Second, By: byPartition}})
	a := e.inPartition(t, q, "a", 3)
	b := e.inPartition(t, q, "b", 3)
	none := e.inPartition(t, q, "", 3)
	wantIDs(t, "first claim", e.claim(t, q, 20), a[0], b[0], none[0])
	e.claimNone(t, q)
	// The first starts' schedule began half an interval back (Slack):
	// the next of each partition is due half a second later.
	e.clk.Advance(time.Second/2 - time.Microsecond)
	e.claimNone(t, q)
	e.clk.Advance(time.Microsecond)
	wantIDs(t, "claim half a second later", e.claim(t, q, 2), a[1], b[1])
	wantIDs(t, "claim of the rest", e.claim(t, q, 20), none[1])
}

// testFlowSettings: QueueSetLimits replaces the limits, which
// QueueSettings and QueueList give back; pausing keeps them.
func testFlowSettings(t *testing.T, e *env) {
	const q = "tuned"
	l := flow.Limits{GlobalLimit: 5, PartitionLimit: 2, ThrottleBy: byPartition,
		Rate: &flow.Rate{Limit: 100, Period: time.Minute, By: byPartition, Burst: 10}}
	e.setLimits(t, q, l) // an unknown queue: created
	wantLimits(t, "QueueSettings", e.settingsOf(t, q), q, false, l)
	if got := findQueue(e.queues(t), q); got == nil {
		t.Fatalf("QueueList lacks queue %q", q)
	} else {
		wantLimits(t, "QueueList", got.QueueSettings, q, false, l)
	}
	e.setPaused(t, q, true)
	wantLimits(t, "paused", e.settingsOf(t, q), q, true, l)

	l2 := flow.Limits{Rate: &flow.Rate{Limit: 3, Period: 1500 * time.Millisecond}}
	e.setLimits(t, q, l2)
	wantLimits(t, "replaced", e.settingsOf(t, q), q, true, l2)
	e.setLimits(t, q, flow.Limits{})
	wantLimits(t, "removed", e.settingsOf(t, q), q, true, flow.Limits{})
	e.setPaused(t, q, false)
	wantLimits(t, "resumed", e.settingsOf(t, q), q, false, flow.Limits{})
}

func wantLimits(t *testing.T, what string, got store.QueueSettings, name string, paused bool, l flow.Limits) {
	t.Helper()
	if got.Name != name || got.Paused != paused || !reflect.DeepEqual(got.Limits, l) {
		t.Fatalf("%s: %s paused=%v limits %s (%+v), want %s paused=%v limits %s", what,
			got.Name, got.Paused, got.Limits, got.Limits.Rate, name, paused, l)
	}
	if got.ThrottledUntil != nil || len(got.Throttled) != 0 {
		t.Fatalf("%s: throttled until %v, partitions %v, want none", what, got.ThrottledUntil, got.Throttled)
	}
}

// testFlowValidation: limits that fail Check, or no queue, are refused
// with a validation error naming the field, and change nothing.
func testFlowValidation(t *testing.T, e *env) {
	const q = "checked"
	l := flow.Limits{GlobalLimit: 2}
	e.setLimits(t, q, l)
	for field, bad := range map[string]flow.Limits{
		"global_limit": {GlobalLimit: -1},
		"rate.limit":   {Rate: &flow.Rate{Period: time.Second}},
		"rate.burst":   {Rate: &flow.Rate{Limit: 1, Period: time.Second, Burst: 2}},
		"throttle_by":  {ThrottleBy: "tenant"},
	} {
		var verr *job.ValidationError
		err := e.s.QueueSetLimits(t.Context(), q, bad)
		if !errors.As(err, &verr) || verr.Field != field {
			t.Fatalf("QueueSetLimits %+v: %v, want a validation error naming %s", bad, err, field)
		}
	}
	var verr *job.ValidationError
	if err := e.s.QueueSetLimits(t.Context(), "", l); !errors.As(err, &verr) || verr.Field != "queue" {
		t.Fatalf("QueueSetLimits of no queue: %v, want a validation error naming queue", err)
	}
	wantLimits(t, "after refusals", e.settingsOf(t, q), q, false, l)
}

// testFlowPaused: a paused limited queue starts nothing, and its limits
// hold once it is resumed.
func testFlowPaused(t *testing.T, e *env) {
	const q = "paused-limited"
	e.setLimits(t, q, flow.Limits{GlobalLimit: 2})
	e.setPaused(t, q, true)
	e.insertN(t, 3, job.InsertParams{Queue: q, Kind: "k"})
	e.claimNone(t, q)
	e.setPaused(t, q, false)
	if n := len(e.claim(t, q, 10)); n != 2 {
		t.Fatalf("claimed %d once resumed, want 2", n)
	}
}

// testFlowWakes: new limits wake the queue's workers (they may allow more).
func testFlowWakes(t *testing.T, e *env) {
	l := e.listen(t)
	e.setLimits(t, "woken", flow.Limits{GlobalLimit: 7})
	l.waitFor(t, "woken")
}

// underLimits runs tests with the default queue limited by limits that
// never bind: the limited claim must keep every rule of the claim
// (order, cursor, lock_key, capabilities, timeouts).
func underLimits(tests ...[]test) []test {
	var out []test
	for _, group := range tests {
		for _, tc := range group {
			out = append(out, test{name: tc.name, fn: func(t *testing.T, e *env) {
				e.setLimits(t, job.DefaultQueue, flow.Limits{GlobalLimit: flow.MaxLimit, PartitionLimit: flow.MaxLimit,
					Rate: &flow.Rate{Limit: flow.MaxLimit, Period: time.Millisecond, By: byPartition, Burst: flow.MaxLimit}})
				tc.fn(t, e)
			}})
		}
	}
	return out
}

var flowRuleTests = underLimits(
	prefixed("Claim", claimTests), prefixed("LockKey", lockTests),
	[]test{
		{"Requires", testWorkerRequires},
		{"Prefers", testWorkerPrefers},
		{"TimeoutDeadline", testTimeoutDeadline},
		{"TimeoutQueueDefault", testTimeoutQueueDefault},
		{"TimeoutLeaseCapped", testTimeoutLeaseCapped},
	})

func prefixed(prefix string, tests []test) []test {
	out := make([]test, len(tests))
	for i, tc := range tests {
		out[i] = test{name: fmt.Sprintf("%s%s", prefix, tc.name), fn: tc.fn}
	}
	return out
}
