package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var healthTests = []test{
	{"Empty", testHealthEmpty},
	{"Counts", testHealthCounts},
	{"Bounds", testHealthBounds},
	{"TraceParent", testTraceParent},
}

func (e *env) health(t *testing.T, p store.HealthParams) *store.Health {
	t.Helper()
	h, err := e.s.QueueHealth(t.Context(), p)
	if err != nil {
		t.Fatalf("QueueHealth: %v", err)
	}
	return h
}

func testHealthEmpty(t *testing.T, e *env) {
	h := e.health(t, store.HealthParams{})
	wantTime(t, "at", h.At, e.now())
	if len(h.Queues) != 0 || len(h.Workers) != 0 {
		t.Fatalf("empty store: queues %+v, workers %+v; want none", h.Queues, h.Workers)
	}
}

// testHealthCounts: queued (due and scheduled), running, the oldest due
// job, jobs waiting on a busy lock_key, paused queues and workers, each
// exactly; finished jobs are not counted.
func testHealthCounts(t *testing.T, e *env) {
	now := e.now()
	// Queue "a": three due jobs, the oldest due a minute ago, one
	// scheduled an hour ahead, one finished.
	e.insert(t, job.InsertParams{Queue: "a", Kind: "k", RunAt: now.Add(-10 * time.Second)})
	e.insert(t, job.InsertParams{Queue: "a", Kind: "k", RunAt: now.Add(-time.Minute), Priority: prio(500)})
	e.insert(t, job.InsertParams{Queue: "a", Kind: "k"})
	e.insert(t, job.InsertParams{Queue: "a", Kind: "k", RunAt: now.Add(time.Hour)})
	e.insert(t, job.InsertParams{Queue: "done", Kind: "k"})
	e.succeed(t, e.claimOne(t, "done"))
	// Queue "b": a running holder of lock "x", two due jobs waiting on
	// it, one due job of a free lock, one running job without a lock.
	e.insert(t, job.InsertParams{Queue: "b", Kind: "k", LockKey: "x", Priority: prio(0)})
	e.insert(t, job.InsertParams{Queue: "b", Kind: "k", Priority: prio(1)})
	if got := e.claim(t, "b", 2); len(got) != 2 {
		t.Fatalf("claimed %d jobs of b, want 2", len(got))
	}
	e.insert(t, job.InsertParams{Queue: "b", Kind: "k", LockKey: "x"})
	e.insert(t, job.InsertParams{Queue: "b", Kind: "k", LockKey: "x"})
	e.insert(t, job.InsertParams{Queue: "b", Kind: "k", LockKey: "y"})
	e.setPaused(t, "c", true)
	e.newWorker(t, "w1")
	e.newWorker(t, "w2")
	e.newWorker(t, "w3")
	e.seen(t, "w2", store.WorkerBusy)
	if _, err := e.s.WorkerSetDisabled(t.Context(), "w3", true); err != nil {
		t.Fatalf("WorkerSetDisabled: %v", err)
	}
	e.clk.Advance(5 * time.Second)

	h := e.health(t, store.HealthParams{})
	wantTime(t, "at", h.At, e.now())
	oldest := now.Add(-time.Minute)
	want := []store.QueueHealth{
		{Queue: "a", Queued: 4, Scheduled: 1, OldestAvailable: &oldest},
		{Queue: "b", Queued: 3, Running: 2, OldestAvailable: &now, LockBlocked: 2},
		{Queue: "c", Paused: true},
		// "done" has finished jobs only: not reported.
	}
	if got := healthString(h.Queues); got != healthString(want) {
		t.Fatalf("queues\n%s\nwant\n%s", got, healthString(want))
	}
	workers := map[string]int64{}
	for _, w := range h.Workers {
		workers[fmt.Sprintf("%s/%t", w.Status, w.Disabled)] += w.Count
	}
	if wantW := map[string]int64{"idle/false": 1, "busy/false": 1, "idle/true": 1}; fmt.Sprint(workers) != fmt.Sprint(wantW) {
		t.Fatalf("workers %v, want %v", workers, wantW)
	}
}

// testHealthBounds: MaxQueues reports the first queues by name; LockScan
// bounds the jobs checked for a busy lock.
func testHealthBounds(t *testing.T, e *env) {
	for _, q := range []string{"q3", "q1", "q2"} {
		e.insert(t, job.InsertParams{Queue: q, Kind: "k"})
	}
	h := e.health(t, store.HealthParams{MaxQueues: 2})
	if len(h.Queues) != 2 || h.Queues[0].Queue != "q1" || h.Queues[1].Queue != "q2" {
		t.Fatalf("MaxQueues 2: %s; want q1 and q2", healthString(h.Queues))
	}
	e.insert(t, job.InsertParams{Queue: "l", Kind: "k", LockKey: "x"})
	e.claimOne(t, "l")
	for range 3 {
		e.insert(t, job.InsertParams{Queue: "l", Kind: "k", LockKey: "x"})
	}
	for scan, want := range map[int]int64{1: 1, 2: 2, 10: 3} {
		h := e.health(t, store.HealthParams{LockScan: scan})
		for _, q := range h.Queues {
			if q.Queue == "l" && q.LockBlocked != want {
				t.Fatalf("LockScan %d: %d blocked, want %d", scan, q.LockBlocked, want)
			}
		}
	}
}

func healthString(qs []store.QueueHealth) string {
	var s string
	for _, q := range qs {
		oldest := "none"
		if q.OldestAvailable != nil {
			oldest = q.OldestAvailable.UTC().Format(time.RFC3339Nano)
		}
		s += fmt.Sprintf("%s paused=%t queued=%d scheduled=%d running=%d oldest=%s blocked=%d\n",
			q.Queue, q.Paused, q.Queued, q.Scheduled, q.Running, oldest, q.LockBlocked)
	}
	return s
}

// testTraceParent: a job keeps the traceparent it was submitted with,
// through its claim; a malformed one is refused and writes nothing.
func testTraceParent(t *testing.T, e *env) {
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	ins := e.insert(t, job.InsertParams{Kind: "k", TraceParent: tp})
	plain := e.insert(t, job.InsertParams{Kind: "k", Priority: prio(1000)})
	if got := e.get(t, ins.ID).TraceParent; ins.TraceParent != tp || got != tp {
		t.Fatalf("trace parent: inserted %q, read %q; want %q", ins.TraceParent, got, tp)
	}
	if c := e.claimOne(t, job.DefaultQueue); c.ID != ins.ID || c.TraceParent != tp {
		t.Fatalf("claimed %s with trace parent %q; want %s with %q", c.ID, c.TraceParent, ins.ID, tp)
	}
	if c := e.claimOne(t, job.DefaultQueue); c.ID != plain.ID || c.TraceParent != "" {
		t.Fatalf("claimed %s with trace parent %q; want %s with none", c.ID, c.TraceParent, plain.ID)
	}
	before := e.total(t)
	for _, bad := range []string{"01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"00-00000000000000000000000000000000-b7ad6b7169203331-01", "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
		"garbage"} {
		_, err := e.s.JobInsertMany(t.Context(), []job.InsertParams{{Kind: "k", TraceParent: bad}})
		var invalid *job.ValidationError
		if !errors.As(err, &invalid) || invalid.Field != "trace_parent" {
			t.Fatalf("insert with trace parent %q: err = %v, want a validation error of trace_parent", bad, err)
		}
	}
	if after := e.total(t); after != before {
		t.Fatalf("refused inserts wrote jobs: %d, then %d", before, after)
	}
}
