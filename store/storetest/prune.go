package storetest

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
)

var pruneTests = []test{
	{"Cutoff", testPruneCutoff},
	{"Limit", testPruneLimit},
	{"FreesIdempotencyKey", testPruneFreesKey},
}

func (e *env) prune(t *testing.T, before time.Time, limit int) int {
	t.Helper()
	n, err := e.s.JobPrune(t.Context(), before, limit)
	if err != nil {
		t.Fatalf("JobPrune: %v", err)
	}
	return n
}

func testPruneCutoff(t *testing.T, e *env) {
	t0 := e.now()
	queued := e.insert(t, job.InsertParams{Queue: "idle", Kind: "k"})
	e.insert(t, job.InsertParams{Queue: "run", Kind: "k", LeaseTTL: time.Minute})
	running := e.claimOne(t, "run") // its lease expires, but nobody rescues it
	e.insert(t, job.InsertParams{Kind: "k"})
	succeeded := e.claimOne(t, job.DefaultQueue)
	e.succeed(t, succeeded)
	e.insert(t, job.InsertParams{Kind: "k"})
	failed := e.claimOne(t, job.DefaultQueue)
	e.fail(t, failed, false, 0)
	canceled := e.insert(t, job.InsertParams{Kind: "k"})
	e.cancel(t, canceled.ID)

	e.clk.Advance(time.Hour)
	e.insert(t, job.InsertParams{Kind: "k"})
	recent := e.claimOne(t, job.DefaultQueue)
	e.succeed(t, recent)

	if n := e.prune(t, t0.Add(30*time.Minute), 100); n != 3 {
		t.Fatalf("pruned %d, want 3", n)
	}
	for _, id := range []uuid.UUID{succeeded.ID, failed.ID, canceled.ID} {
		e.gone(t, id)
		e.wantKinds(t, id)
	}
	for _, id := range []uuid.UUID{queued.ID, running.ID, recent.ID} {
		if len(e.events(t, id)) == 0 {
			t.Fatalf("job %s kept but its journal was pruned", id)
		}
	}
	wantState(t, e.get(t, queued.ID), job.StateQueued)
	wantState(t, e.get(t, running.ID), job.StateRunning)
	wantState(t, e.get(t, recent.ID), job.StateSucceeded)

	// A cutoff in the future takes every finished job, and still no active one.
	if n := e.prune(t, e.now().Add(24*time.Hour), 100); n != 1 {
		t.Fatalf("second prune took %d, want 1", n)
	}
	e.gone(t, recent.ID)
	wantState(t, e.get(t, queued.ID), job.StateQueued)
	wantState(t, e.get(t, running.ID), job.StateRunning)
}

func testPruneLimit(t *testing.T, e *env) {
	for _, j := range e.insertN(t, 5, job.InsertParams{Kind: "k"}) {
		e.cancel(t, j.ID)
	}
	e.clk.Advance(time.Minute)
	for i, want := range []int{2, 2, 1, 0} {
		if n := e.prune(t, e.now(), 2); n != want {
			t.Fatalf("prune %d with limit 2: %d jobs, want %d", i, n, want)
		}
	}
	if n := e.total(t); n != 0 {
		t.Fatalf("%d jobs left, want 0", n)
	}
}

// testPruneFreesKey: an idempotency key returns its job only as long as the
// job is retained.
func testPruneFreesKey(t *testing.T, e *env) {
	p := job.InsertParams{Kind: "charge", IdempotencyKey: "order-1"}
	first := e.insert(t, p)
	e.succeed(t, e.claimOne(t, job.DefaultQueue))
	e.clk.Advance(time.Minute)
	if n := e.prune(t, e.now(), 10); n != 1 {
		t.Fatalf("pruned %d, want 1", n)
	}
	if second := e.insert(t, p); second.ID == first.ID {
		t.Fatalf("insert after prune returned the pruned job")
	}
}
