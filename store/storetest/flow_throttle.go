package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// flowThrottleTests hold the stores to the throttles outcomes set
// (job.Outcome.Throttle).
var flowThrottleTests = []test{
	{"Queue", testFlowThrottleQueue},
	{"LimitedQueue", testFlowThrottleLimitedQueue},
	{"Partition", testFlowThrottlePartition},
	{"NeverShortened", testFlowThrottleNeverShortened},
	{"Batch", testFlowThrottleBatch},
	{"CancelWins", testFlowThrottleCancelWins},
	{"ByIfUnset", testFlowThrottleByIfUnset},
	{"ByIfUnsetConcurrent", testFlowThrottleByIfUnsetConcurrent},
}

// throttle reports j's failure with a throttle of d, which must apply.
func (e *env) throttle(t *testing.T, j *job.Job, d time.Duration) store.FinishResult {
	t.Helper()
	return e.finishOne(t, throttledOutcome(j, d))
}

func throttledOutcome(j *job.Job, d time.Duration) store.Outcome {
	return store.Outcome{Lease: leaseOf(j), Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "429 Too Many Requests", Throttle: d}}
}

// testFlowThrottleQueue: a throttle on a queue without limits puts the
// job back, its attempt not counted (even its last), and starts no job of
// the queue until it passes; then every one starts again.
func testFlowThrottleQueue(t *testing.T, e *env) {
	testFlowThrottleWhole(t, e, "throttled", flow.Limits{})
}

// testFlowThrottleLimitedQueue is testFlowThrottleQueue on a limited queue.
func testFlowThrottleLimitedQueue(t *testing.T, e *env) {
	testFlowThrottleWhole(t, e, "throttled-limited", flow.Limits{GlobalLimit: 10, PartitionLimit: 5})
}

func testFlowThrottleWhole(t *testing.T, e *env, q string, l flow.Limits) {
	if l.Limited() {
		e.setLimits(t, q, l)
	}
	first := e.insert(t, job.InsertParams{Queue: q, Kind: "k", MaxAttempts: 1, PartitionKey: "a"})
	rest := e.insertN(t, 2, job.InsertParams{Queue: q, Kind: "k", PartitionKey: "b"})
	c := e.claimOne(t, q)
	if c.ID != first.ID {
		t.Fatalf("claimed %s, want %s", c.ID, first.ID)
	}
	until := e.now().Add(10 * time.Second)
	res := e.throttle(t, c, 10*time.Second)
	if res.State != job.StateQueued || !res.RunAt.Equal(until) {
		t.Fatalf("throttled: %+v, want queued at %v", res, until)
	}
	j := e.get(t, first.ID)
	wantState(t, j, job.StateQueued)
	wantTime(t, "run_at", j.RunAt, until)
	if j.Attempt != 0 || j.LastError != "429 Too Many Requests" {
		t.Fatalf("throttled job: attempt %d, last error %q; want 0 (not counted) and the error", j.Attempt, j.LastError)
	}
	if evs := e.events(t, j.ID); evs[len(evs)-1].Kind != job.EventThrottled {
		t.Fatalf("journal %v, want it to end with %q", kindsOf(evs), job.EventThrottled)
	}
	st := e.settingsOf(t, q)
	if st.ThrottledUntil == nil || !st.ThrottledUntil.Equal(until) || len(st.Throttled) != 0 {
		t.Fatalf("settings: throttled until %v, partitions %v; want %v and none", st.ThrottledUntil, st.Throttled, until)
	}
	if got := findQueue(e.queues(t), q); got == nil || got.ThrottledUntil == nil || !got.ThrottledUntil.Equal(until) {
		t.Fatalf("QueueList: %+v, want the queue throttled until %v", got, until)
	}

	e.claimNone(t, q) // rest are due, but the queue is throttled
	e.clk.Advance(10*time.Second - time.Microsecond)
	e.claimNone(t, q)
	e.clk.Advance(time.Microsecond)
	wantIDs(t, "claim once the throttle passed", e.claim(t, q, 10), rest[0], rest[1], first)
	if st := e.settingsOf(t, q); st.ThrottledUntil != nil {
		t.Fatalf("settings once the throttle passed: throttled until %v, want nil", st.ThrottledUntil)
	}
	if j := e.get(t, first.ID); j.Attempt != 1 {
		t.Fatalf("the throttled job's next attempt is %d, want 1", j.Attempt)
	}
}

// testFlowThrottlePartition: with throttle_by partition_key, a throttle
// stops the job's partition only; partitions are listed, soonest first.
func testFlowThrottlePartition(t *testing.T, e *env) {
	const q = "tenants"
	e.setLimits(t, q, flow.Limits{ThrottleBy: byPartition})
	a := e.inPartition(t, q, "a", 2)
	b := e.inPartition(t, q, "b", 2)
	none := e.inPartition(t, q, "", 1)
	e.throttle(t, e.claimOne(t, q), 10*time.Second) // a[0]
	wantIDs(t, "claim with a throttled", e.claim(t, q, 1), b[0])
	e.clk.Advance(time.Second)
	e.throttle(t, e.get(t, b[0].ID), 5*time.Second)
	wantIDs(t, "claim with a and b throttled", e.claim(t, q, 10), none[0])
	st := e.settingsOf(t, q)
	want := []store.PartitionThrottle{
		{PartitionKey: "b", Until: e.now().Add(5 * time.Second)},
		{PartitionKey: "a", Until: e.now().Add(9 * time.Second)},
	}
	if st.ThrottledUntil != nil || !slices.EqualFunc(st.Throttled, want, func(x, y store.PartitionThrottle) bool {
		return x.PartitionKey == y.PartitionKey && x.Until.Equal(y.Until)
	}) {
		t.Fatalf("settings: throttled until %v, partitions %v; want none and %v", st.ThrottledUntil, st.Throttled, want)
	}
	e.clk.Advance(5 * time.Second)
	wantIDs(t, "claim once b's throttle passed", e.claim(t, q, 10), b[1], b[0])
	e.clk.Advance(4 * time.Second)
	wantIDs(t, "claim once a's throttle passed", e.claim(t, q, 10), a[1], a[0])
	if st := e.settingsOf(t, q); len(st.Throttled) != 0 {
		t.Fatalf("settings once every throttle passed: %v, want none", st.Throttled)
	}

	// A throttle of the partition "" (the jobs without a partition_key).
	more := e.inPartition(t, q, "", 1)[0]
	if c := e.claimOne(t, q); c.ID != more.ID {
		t.Fatalf("claimed %s, want %s", c.ID, more.ID)
	}
	e.throttle(t, e.get(t, more.ID), time.Minute)
	other := e.insert(t, job.InsertParams{Queue: q, Kind: "k", PartitionKey: "c"})
	e.insert(t, job.InsertParams{Queue: q, Kind: "k"})
	wantIDs(t, "claim with \"\" throttled", e.claim(t, q, 10), other)
	if st := e.settingsOf(t, q); len(st.Throttled) != 1 || st.Throttled[0].PartitionKey != "" {
		t.Fatalf("settings: %v, want the partition \"\" throttled", st.Throttled)
	}

	// Limits without a throttle_by of partition_key drop the partitions'
	// throttles: the throttle stopped the whole queue, or nothing.
	e.setLimits(t, q, flow.Limits{GlobalLimit: 10})
	if st := e.settingsOf(t, q); len(st.Throttled) != 0 || st.ThrottledUntil != nil {
		t.Fatalf("settings after new limits: %v until %v, want no throttle", st.Throttled, st.ThrottledUntil)
	}
	if n := len(e.claim(t, q, 10)); n != 1 { // the job without a partition_key; more is due in a minute
		t.Fatalf("claimed %d, want 1", n)
	}
}

// testFlowThrottleNeverShortened: a second throttle that ends sooner
// leaves the later end.
func testFlowThrottleNeverShortened(t *testing.T, e *env) {
	const q = "twice"
	jobs := e.insertN(t, 3, job.InsertParams{Queue: q, Kind: "k"})
	got := e.claim(t, q, 2)
	long := e.now().Add(time.Minute)
	e.throttle(t, got[0], time.Minute)
	e.throttle(t, got[1], time.Second)
	if st := e.settingsOf(t, q); st.ThrottledUntil == nil || !st.ThrottledUntil.Equal(long) {
		t.Fatalf("throttled until %v, want %v", st.ThrottledUntil, long)
	}
	e.clk.Advance(30 * time.Second)
	e.claimNone(t, q)
	e.clk.Advance(30 * time.Second)
	wantIDs(t, "claim once the throttle passed", e.claim(t, q, 10), jobs[2], jobs[1], jobs[0])
}

// testFlowThrottleBatch: one JobFinish with several throttles of one
// queue and of one partition, beside other outcomes, applies them all.
func testFlowThrottleBatch(t *testing.T, e *env) {
	const q, p = "batched", "batched-partitions"
	e.setLimits(t, p, flow.Limits{ThrottleBy: byPartition})
	e.insertN(t, 3, job.InsertParams{Queue: q, Kind: "k"})
	e.inPartition(t, p, "a", 3)
	e.inPartition(t, p, "b", 1)
	qs, ps := e.claim(t, q, 3), e.claim(t, p, 3)
	res := e.finish(t, throttledOutcome(qs[0], time.Minute), throttledOutcome(qs[1], 2*time.Minute),
		outcomeSucceeded(qs[2], `{}`), throttledOutcome(ps[0], time.Minute), throttledOutcome(ps[1], 2*time.Minute),
		outcomeSucceeded(ps[2], `{}`))
	for i, r := range res {
		want := job.StateQueued
		if i == 2 || i == 5 {
			want = job.StateSucceeded
		}
		if r.Lost || r.State != want {
			t.Fatalf("outcome %d: %+v, want %s", i, r, want)
		}
	}
	if st := e.settingsOf(t, q); st.ThrottledUntil == nil || !st.ThrottledUntil.Equal(e.now().Add(2*time.Minute)) {
		t.Fatalf("queue throttled until %v, want in two minutes", st.ThrottledUntil)
	}
	st := e.settingsOf(t, p)
	if len(st.Throttled) != 1 || st.Throttled[0].PartitionKey != "a" || !st.Throttled[0].Until.Equal(e.now().Add(2*time.Minute)) {
		t.Fatalf("partitions throttled %v, want a in two minutes", st.Throttled)
	}
}

// testFlowThrottleCancelWins: a throttle of a job whose cancel was
// requested cancels it, and throttles nothing.
func testFlowThrottleCancelWins(t *testing.T, e *env) {
	const q = "canceled"
	e.insertN(t, 2, job.InsertParams{Queue: q, Kind: "k"})
	c := e.claimOne(t, q)
	e.cancel(t, c.ID)
	if res := e.throttle(t, c, time.Minute); res.State != job.StateCanceled {
		t.Fatalf("throttle of a job asked to stop: %+v, want canceled", res)
	}
	e.claimOne(t, q)
	all, err := e.s.QueueSettings(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range all {
		if st.Name == q && st.ThrottledUntil != nil {
			t.Fatalf("queue throttled until %v, want no throttle", st.ThrottledUntil)
		}
	}
}

// setThrottleBy runs QueueSetThrottleByIfUnset on s and returns whether
// it set throttle_by.
func setThrottleBy(t *testing.T, s store.Store, queue string) bool {
	t.Helper()
	set, err := s.QueueSetThrottleByIfUnset(t.Context(), queue, byPartition)
	if err != nil {
		t.Fatalf("QueueSetThrottleByIfUnset %q: %v", queue, err)
	}
	return set
}

// testFlowThrottleByIfUnset: QueueSetThrottleByIfUnset sets throttle_by
// where none is set (an unknown queue is created), keeps every other
// setting, and changes nothing where one is set; bad arguments are
// refused with a validation error naming the field, and change nothing.
func testFlowThrottleByIfUnset(t *testing.T, e *env) {
	const fresh = "throttle-by-fresh"
	if !setThrottleBy(t, e.s, fresh) {
		t.Fatalf("throttle_by of an unknown queue not set")
	}
	wantLimits(t, "unknown queue", e.settingsOf(t, fresh), fresh, false, flow.Limits{ThrottleBy: byPartition})
	if setThrottleBy(t, e.s, fresh) {
		t.Fatalf("throttle_by set again")
	}

	const q = "throttle-by-kept"
	l := flow.Limits{GlobalLimit: 7, PartitionLimit: 3, Rate: &flow.Rate{Limit: 100, Period: time.Minute, By: byPartition, Burst: 4}}
	e.setLimits(t, q, l)
	e.setPaused(t, q, true)
	if !setThrottleBy(t, e.s, q) {
		t.Fatalf("throttle_by of a queue without one not set")
	}
	want := l
	want.ThrottleBy = byPartition
	wantLimits(t, "operator's limits", e.settingsOf(t, q), q, true, want)
	if setThrottleBy(t, e.s, q) {
		t.Fatalf("throttle_by set again")
	}
	wantLimits(t, "second call", e.settingsOf(t, q), q, true, want)

	for _, bad := range []struct{ queue, by, field string }{
		{q, "", "throttle_by"},
		{q, "tenant", "throttle_by"},
		{"", byPartition, "queue"},
	} {
		var verr *job.ValidationError
		set, err := e.s.QueueSetThrottleByIfUnset(t.Context(), bad.queue, bad.by)
		if set || !errors.As(err, &verr) || verr.Field != bad.field {
			t.Fatalf("QueueSetThrottleByIfUnset(%q, %q): %v, %v, want a validation error naming %s", bad.queue, bad.by, set, err, bad.field)
		}
	}
	e.setLimits(t, q, l)
	wantLimits(t, "after refusals and a reset", e.settingsOf(t, q), q, true, l)
}

// testFlowThrottleByIfUnsetConcurrent: an operator's limits written on
// another node while QueueSetThrottleByIfUnset runs are never lost:
// whichever commits last, the queue ends with the operator's global
// limit, and with throttle_by exactly when the conditional write came
// last or found none set. A read of the settings followed by a write
// of them with throttle_by added loses the operator's write when it
// lands between the two.
func testFlowThrottleByIfUnsetConcurrent(t *testing.T, e *env) {
	other := e.otherNode(t)
	for round := range 40 {
		q := fmt.Sprintf("throttle-by-race-%d", round)
		e.setLimits(t, q, flow.Limits{GlobalLimit: 1})
		operator := flow.Limits{GlobalLimit: 7}
		var (
			wg  sync.WaitGroup
			set bool
			err [2]error
		)
		wg.Add(2)
		go func() {
			defer wg.Done()
			set, err[0] = e.s.QueueSetThrottleByIfUnset(t.Context(), q, byPartition)
		}()
		go func() {
			defer wg.Done()
			err[1] = other.QueueSetLimits(t.Context(), q, operator)
		}()
		wg.Wait()
		if err[0] != nil || err[1] != nil {
			t.Fatalf("round %d: QueueSetThrottleByIfUnset: %v; QueueSetLimits: %v", round, err[0], err[1])
		}
		if !set {
			t.Fatalf("round %d: throttle_by not set where none ever was", round)
		}
		got := e.settingsOf(t, q).Limits
		if got.GlobalLimit != operator.GlobalLimit {
			t.Fatalf("round %d: limits %s, want the operator's global_limit %d kept", round, got, operator.GlobalLimit)
		}
		if got.ThrottleBy != "" && got.ThrottleBy != byPartition {
			t.Fatalf("round %d: throttle_by %q", round, got.ThrottleBy)
		}
	}
}
