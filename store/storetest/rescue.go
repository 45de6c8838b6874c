package storetest

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
)

var rescueTests = []test{
	{"Expired", testRescueExpired},
	{"AttemptsUsed", testRescueAttemptsUsed},
	{"Unexpired", testRescueUnexpired},
	{"Limit", testRescueLimit},
	{"Boundary", testRescueBoundary},
	{"Concurrent", testRescueConcurrent},
}

func testRescueExpired(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k", LeaseTTL: time.Minute})
	c := e.claimOne(t, job.DefaultQueue)
	e.clk.Advance(time.Minute + time.Second)
	if n := e.rescue(t, 10); n != 1 {
		t.Fatalf("rescued %d, want 1", n)
	}
	j := e.get(t, c.ID)
	wantState(t, j, job.StateQueued)
	wantTime(t, "run_at", j.RunAt, e.now())
	wantNil(t, "finished_at", j.FinishedAt)
	if j.Attempt != 1 || j.LeaseToken != uuid.Nil {
		t.Fatalf("rescued job: attempt %d token %s, want 1 (counted) and no token", j.Attempt, j.LeaseToken)
	}
	e.wantKinds(t, c.ID, job.EventQueued, job.EventClaimed, job.EventRescued)
	wantDetail(t, e.events(t, c.ID)[2], "lease expired")
	if n := e.rescue(t, 10); n != 0 {
		t.Fatalf("second rescue took %d, want 0", n)
	}
	if again := e.claimOne(t, job.DefaultQueue); again.Attempt != 2 {
		t.Fatalf("claim after rescue: attempt %d, want 2", again.Attempt)
	}
}

func testRescueAttemptsUsed(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k", MaxAttempts: 1, LeaseTTL: time.Minute})
	c := e.claimOne(t, job.DefaultQueue)
	e.clk.Advance(2 * time.Minute)
	if n := e.rescue(t, 10); n != 1 {
		t.Fatalf("rescued %d, want 1", n)
	}
	j := e.get(t, c.ID)
	wantFinished(t, j, job.StateFailed, e.now())
	e.wantKinds(t, c.ID, job.EventQueued, job.EventClaimed, job.EventFailed)
	e.claimNone(t, job.DefaultQueue)
}

func testRescueUnexpired(t *testing.T, e *env) {
	short := e.insert(t, job.InsertParams{Kind: "k", LeaseTTL: 30 * time.Second})
	long := e.insert(t, job.InsertParams{Kind: "k", LeaseTTL: 2 * time.Minute})
	if got := e.claim(t, job.DefaultQueue, 2); len(got) != 2 {
		t.Fatalf("claimed %d, want 2", len(got))
	}
	before := e.get(t, long.ID)
	e.clk.Advance(time.Minute)
	if n := e.rescue(t, 10); n != 1 {
		t.Fatalf("rescued %d, want 1 (only the 30s lease expired)", n)
	}
	wantState(t, e.get(t, short.ID), job.StateQueued)
	unchanged(t, before, e.get(t, long.ID))
}

func testRescueLimit(t *testing.T, e *env) {
	e.insertN(t, 5, job.InsertParams{Kind: "k", LeaseTTL: time.Minute})
	if got := e.claim(t, job.DefaultQueue, 5); len(got) != 5 {
		t.Fatalf("claimed %d, want 5", len(got))
	}
	e.clk.Advance(2 * time.Minute)
	for i, want := range []int{2, 2, 1, 0} {
		if n := e.rescue(t, 2); n != want {
			t.Fatalf("rescue %d with limit 2: %d jobs, want %d", i, n, want)
		}
	}
}

// testRescueBoundary: a lease covers the instants before its expiry, and
// has expired at its expiry exactly (lease_expires_at <= now).
func testRescueBoundary(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k", LeaseTTL: time.Minute})
	c := e.claimOne(t, job.DefaultQueue)
	wantTimePtr(t, "lease_expires_at", c.LeaseExpiresAt, e.now().Add(time.Minute))
	e.clk.Advance(time.Minute - time.Microsecond)
	if n := e.rescue(t, 10); n != 0 {
		t.Fatalf("rescued %d 1µs before the lease's expiry, want 0", n)
	}
	e.clk.Advance(time.Microsecond)
	if n := e.rescue(t, 10); n != 1 {
		t.Fatalf("rescued %d at the lease's expiry, want 1", n)
	}
	wantState(t, e.get(t, c.ID), job.StateQueued)
}
