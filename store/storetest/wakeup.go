package storetest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var wakeupTests = []test{
	{"Insert", testWakeInsert},
	{"InsertWakesDueQueuesOnly", testWakeInsertDueQueuesOnly},
	{"InsertBound", testWakeInsertBound},
	{"Wake", testWakeWake},
	{"DelayedInsert", testWakeDelayedInsert},
	{"OperatorRetry", testWakeOperatorRetry},
	{"RetryDue", testWakeRetryDue},
	{"Release", testWakeRelease},
	{"Rescue", testWakeRescue},
	{"CancelRunning", testWakeCancelRunning},
	{"CancelQueued", testWakeCancelQueued},
	{"Resume", testWakeResume},
}

// waitLimit bounds every wait for a wake-up. It is a deadline for a test
// that would otherwise hang, not a timing assertion.
const waitLimit = 5 * time.Second

// listener collects what a store's Listen reports.
type listener struct {
	e        *env
	ch       chan store.Notification
	stopped  chan struct{}
	err      error // Listen's return, once stopped is closed
	overflow atomic.Bool
	markers  int
}

// listen runs Listen until the test ends and returns once it receives wake-ups.
func (e *env) listen(t *testing.T) *listener {
	t.Helper()
	l := &listener{e: e, ch: make(chan store.Notification, 4096), stopped: make(chan struct{})}
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		defer close(l.stopped)
		l.err = e.s.Listen(ctx, func(n store.Notification) {
			select {
			case l.ch <- n:
			default:
				l.overflow.Store(true)
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-l.stopped }) // before the store closes
	l.ready(t)
	return l
}

// ready waits until Listen delivers: nothing says when it has subscribed
// (on PostgreSQL, when LISTEN has run), so it Wakes a probe queue until the
// probe comes back. This is the one poll of the suite, bounded by waitLimit.
func (l *listener) ready(t *testing.T) {
	t.Helper()
	const probe = "storetest-probe"
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		if err := l.e.s.Wake(t.Context(), probe); err != nil {
			t.Fatalf("Wake: %v", err)
		}
		retry := time.NewTimer(50 * time.Millisecond)
		for waiting := true; waiting; {
			select {
			case n := <-l.ch:
				if sameWake(n, store.Notification{Queue: probe}) {
					retry.Stop()
					return
				}
			case <-retry.C:
				waiting = false
			case <-l.stopped:
				t.Fatalf("Listen returned early: %v", l.err)
			}
		}
	}
	t.Fatalf("Listen delivered no wake-up within %s", waitLimit)
}

// waitFor waits for a wake-up naming queue, skipping others, and returns
// it.
func (l *listener) waitFor(t *testing.T, queue string) store.Notification {
	t.Helper()
	before := l.waitUntil(t, fmt.Sprintf("wake-up for queue %q", queue), store.Notification{Queue: queue})
	return before[len(before)-1]
}

// waitCancel waits for the cancel notification of job id, skipping others.
func (l *listener) waitCancel(t *testing.T, id uuid.UUID) {
	t.Helper()
	l.waitUntil(t, fmt.Sprintf("cancel notification for job %s", id), store.Notification{CancelJob: id})
}

// sameWake reports whether n is want, whatever bound of claim order
// (Earliest) a wake-up carries.
func sameWake(n, want store.Notification) bool {
	return n.Queue == want.Queue && n.CancelJob == want.CancelJob
}

// waitUntil waits for want (sameWake) and returns the notifications that
// came before it, then it.
func (l *listener) waitUntil(t *testing.T, what string, want store.Notification) []store.Notification {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	var before []store.Notification
	for {
		select {
		case n := <-l.ch:
			before = append(before, n)
			if sameWake(n, want) {
				return before
			}
		case <-l.stopped:
			t.Fatalf("Listen returned early: %v", l.err)
		case <-deadline.C:
			if l.overflow.Load() {
				t.Fatalf("notifications overflowed the test's buffer")
			}
			t.Fatalf("no %s within %s", what, waitLimit)
		}
	}
}

// drain reads every notification sent so far and returns them: it Wakes
// a fresh marker queue and reads up to it. Notifications arrive in the
// order they were sent (on PostgreSQL, in commit order), so one that
// arrives after drain was sent after it.
func (l *listener) drain(t *testing.T) []store.Notification {
	t.Helper()
	l.markers++
	marker := fmt.Sprintf("storetest-marker-%d", l.markers)
	if err := l.e.s.Wake(t.Context(), marker); err != nil {
		t.Fatalf("Wake: %v", err)
	}
	got := l.waitUntil(t, fmt.Sprintf("wake-up for marker queue %q", marker), store.Notification{Queue: marker})
	return got[:len(got)-1]
}

func testWakeInsert(t *testing.T, e *env) {
	l := e.listen(t)
	e.insert(t, job.InsertParams{Queue: "mail", Kind: "k"})
	l.waitFor(t, "mail")
}

// testWakeInsertDueQueuesOnly: a batch wakes each queue that got a job it
// can run now, once, and no queue whose jobs are all due later.
func testWakeInsertDueQueuesOnly(t *testing.T, e *env) {
	l := e.listen(t)
	later := e.now().Add(time.Minute)
	_, err := e.s.JobInsertMany(t.Context(), []job.InsertParams{
		{Queue: "later-only", Kind: "k", RunAt: later},
		{Queue: "mixed", Kind: "k", RunAt: later},
		{Queue: "now", Kind: "k"},
		{Queue: "mixed", Kind: "k", RunAt: e.now().Add(-time.Second)},
		{Queue: "now", Kind: "k"},
	})
	if err != nil {
		t.Fatalf("JobInsertMany: %v", err)
	}
	woken := map[string]int{}
	for _, n := range l.drain(t) {
		woken[n.Queue]++
	}
	if woken["now"] != 1 || woken["mixed"] != 1 || woken["later-only"] != 0 {
		t.Fatalf("wake-ups by queue %v, want now and mixed once each, later-only never", woken)
	}
}

// testWakeInsertBound: an insert's wake-up carries a lower bound of its
// jobs' claim order (store.Notification.Earliest), which claimers rely on
// to keep their cursor: none of the jobs sorts before it, and it is the
// least priority and the earliest run_at of the batch.
func testWakeInsertBound(t *testing.T, e *env) {
	l := e.listen(t)
	now := e.now().Truncate(time.Microsecond)
	five, two := 5, 2
	_, err := e.s.JobInsertMany(t.Context(), []job.InsertParams{
		{Queue: "bounded", Kind: "k", Priority: &five, RunAt: now.Add(-10 * time.Second)},
		{Queue: "bounded", Kind: "k", Priority: &two, RunAt: now.Add(-time.Second)},
	})
	if err != nil {
		t.Fatalf("JobInsertMany: %v", err)
	}
	n := l.waitFor(t, "bounded")
	want := store.ClaimBound{Priority: 2, RunAt: now.Add(-10 * time.Second)}
	if n.Earliest == nil || n.Earliest.Priority != want.Priority || !n.Earliest.RunAt.Equal(want.RunAt) {
		t.Fatalf("the insert's wake-up carries the bound %+v, want %+v", n.Earliest, want)
	}
}

func testWakeWake(t *testing.T, e *env) {
	l := e.listen(t)
	if err := e.s.Wake(t.Context(), "a", "b"); err != nil {
		t.Fatalf("Wake: %v", err)
	}
	l.waitFor(t, "a")
	l.waitFor(t, "b")
}

// testWakeDelayedInsert: a job due later wakes its queue when its run_at
// passes, so an idle worker need not poll for it.
func testWakeDelayedInsert(t *testing.T, e *env) {
	l := e.listen(t)
	e.insert(t, job.InsertParams{Queue: "later", Kind: "k", RunAt: e.now().Add(time.Minute)})
	l.drain(t)
	e.clk.Advance(time.Minute + time.Second)
	l.waitFor(t, "later")
	e.claimOne(t, "later")
}

func testWakeOperatorRetry(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Queue: "ops", Kind: "k"})
	c := e.claimOne(t, "ops")
	e.fail(t, c, false, 0)
	l := e.listen(t)
	e.retry(t, c.ID)
	l.waitFor(t, "ops")
}

// testWakeRetryDue: a failed attempt queued for a later retry wakes its
// queue when the retry falls due.
func testWakeRetryDue(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Queue: "flaky", Kind: "k"})
	c := e.claimOne(t, "flaky")
	l := e.listen(t)
	e.fail(t, c, true, 30*time.Second)
	l.drain(t)
	e.clk.Advance(31 * time.Second)
	l.waitFor(t, "flaky")
	e.claimOne(t, "flaky")
}

func testWakeRelease(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Queue: "drain", Kind: "k"})
	c := e.claimOne(t, "drain")
	l := e.listen(t)
	e.finishOne(t, releaseOf(c))
	l.waitFor(t, "drain")
}

func testWakeRescue(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Queue: "lost", Kind: "k", LeaseTTL: time.Minute})
	e.claimOne(t, "lost")
	l := e.listen(t)
	e.clk.Advance(2 * time.Minute)
	if n := e.rescue(t, 10); n != 1 {
		t.Fatalf("rescued %d, want 1", n)
	}
	l.waitFor(t, "lost")
}

// testWakeCancelRunning: asking a running job to stop notifies its holder,
// wherever it listens.
func testWakeCancelRunning(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Queue: "long", Kind: "k"})
	c := e.claimOne(t, "long")
	l := e.listen(t)
	e.cancel(t, c.ID)
	l.waitCancel(t, c.ID)
}

// testWakeCancelQueued: a queued job is canceled at once and nobody runs
// it, so its cancel notifies no holder.
func testWakeCancelQueued(t *testing.T, e *env) {
	l := e.listen(t)
	j := e.insert(t, job.InsertParams{Queue: "short", Kind: "k"})
	l.drain(t)
	wantState(t, e.cancel(t, j.ID), job.StateCanceled)
	for _, n := range l.drain(t) {
		if n.CancelJob != uuid.Nil {
			t.Fatalf("cancel of a queued job sent %+v, want no cancel notification", n)
		}
	}
}

// testWakeResume: resuming a paused queue wakes its workers on every
// node, so that they claim at once rather than at their next poll.
func testWakeResume(t *testing.T, e *env) {
	e.setPaused(t, "held", true)
	e.insert(t, job.InsertParams{Queue: "held", Kind: "k"})
	l := e.listen(t)
	l.drain(t)
	e.setPaused(t, "held", false)
	l.waitFor(t, "held")
}
