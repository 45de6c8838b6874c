package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var fencingTests = []test{
	{"WrongToken", testFencingWrongToken},
	{"StaleAfterRescue", testFencingStale},
	{"AfterFinish", testFencingAfterFinish},
	{"MixedBatch", testFencingMixedBatch},
}

// wantFenced makes every lease-holder write with lease, which must not be
// held, and requires each to report the loss and change nothing.
func wantFenced(t *testing.T, e *env, lease store.Lease) {
	t.Helper()
	before := e.get(t, lease.ID)
	e.clk.Advance(time.Second) // a write that slipped through would move updated_at

	hb, err := e.s.JobHeartbeat(t.Context(), owner, []store.Lease{lease})
	if err != nil {
		t.Fatalf("JobHeartbeat: %v", err)
	}
	if len(hb) != 1 || hb[0].Held {
		t.Fatalf("heartbeat with a lost lease: %+v, want Held false", hb)
	}
	_, err = e.s.JobSetProgress(t.Context(), lease, job.Progress{Phase: "stale", Done: 9, Total: 9})
	wantErr(t, "JobSetProgress with a lost lease", err, job.ErrLeaseLost)
	err = e.s.JobSetCheckpoint(t.Context(), lease, json.RawMessage(`{"stale": true}`))
	wantErr(t, "JobSetCheckpoint with a lost lease", err, job.ErrLeaseLost)
	for _, o := range []store.Outcome{
		{Lease: lease, Status: store.OutcomeSucceeded, Result: json.RawMessage(`{"stale": true}`)},
		{Lease: lease, Status: store.OutcomeFailed, Error: "stale", Retryable: true},
		{Lease: lease, Status: store.OutcomeFailed, Error: "stale"},
		{Lease: lease, Status: store.OutcomeCanceled},
		{Lease: lease, Status: store.OutcomeReleased},
	} {
		if res := e.finish(t, o); !res[0].Lost {
			t.Fatalf("JobFinish %s with a lost lease: %+v, want Lost", o.Status, res[0])
		}
	}
	unchanged(t, before, e.get(t, lease.ID))
}

func testFencingWrongToken(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k"})
	c := e.claimOne(t, job.DefaultQueue)
	wantFenced(t, e, store.Lease{ID: c.ID, Token: uuid.New()})
	wantFenced(t, e, store.Lease{ID: c.ID, Token: uuid.Nil})
	// The real token still works.
	if _, err := e.s.JobSetProgress(t.Context(), leaseOf(c), job.Progress{Done: 1, Total: 2}); err != nil {
		t.Fatalf("JobSetProgress with the held lease: %v", err)
	}
	e.succeed(t, c)
}

func testFencingStale(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k", LeaseTTL: time.Minute})
	old := e.claimOne(t, job.DefaultQueue)
	e.clk.Advance(time.Minute + time.Second)
	if n := e.rescue(t, 10); n != 1 {
		t.Fatalf("rescued %d, want 1", n)
	}
	cur := e.claimOne(t, job.DefaultQueue)
	if cur.ID != old.ID || cur.Attempt != 2 || cur.LeaseToken == old.LeaseToken {
		t.Fatalf("reclaim: id %s attempt %d token %s; want %s, attempt 2, a new token", cur.ID, cur.Attempt, cur.LeaseToken, old.ID)
	}
	if _, err := e.s.JobSetProgress(t.Context(), leaseOf(cur), job.Progress{Phase: "new", Done: 1, Total: 3}); err != nil {
		t.Fatalf("JobSetProgress of the new holder: %v", err)
	}
	wantFenced(t, e, leaseOf(old))

	e.finishOne(t, store.Outcome{Lease: leaseOf(cur), Status: store.OutcomeSucceeded, Result: json.RawMessage(`{"by": "new"}`)})
	// The stale holder cannot overwrite the new holder's result either.
	wantFenced(t, e, leaseOf(old))
	j := e.get(t, old.ID)
	wantState(t, j, job.StateSucceeded)
	wantJSON(t, "result", j.Result, []byte(`{"by": "new"}`))
}

func testFencingAfterFinish(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k"})
	c := e.claimOne(t, job.DefaultQueue)
	e.finishOne(t, store.Outcome{Lease: leaseOf(c), Status: store.OutcomeSucceeded, Result: json.RawMessage(`{"n": 1}`)})
	wantFenced(t, e, leaseOf(c)) // a finished job's own token is spent

	e.insert(t, job.InsertParams{Kind: "k"})
	r := e.claimOne(t, job.DefaultQueue)
	e.finishOne(t, releaseOf(r))
	wantFenced(t, e, leaseOf(r)) // so is a released one's
}

func testFencingMixedBatch(t *testing.T, e *env) {
	e.insertN(t, 2, job.InsertParams{Kind: "k"})
	got := e.claim(t, job.DefaultQueue, 2)
	if len(got) != 2 {
		t.Fatalf("claimed %d, want 2", len(got))
	}
	a, b := got[0], got[1]
	res := e.finish(t,
		store.Outcome{Lease: store.Lease{ID: a.ID, Token: uuid.New()}, Status: store.OutcomeSucceeded},
		store.Outcome{Lease: leaseOf(b), Status: store.OutcomeSucceeded, Result: json.RawMessage(`{"ok": true}`)})
	if !res[0].Lost || res[1].Lost || res[1].State != job.StateSucceeded {
		t.Fatalf("mixed batch results %+v, want [Lost, succeeded]", res)
	}
	wantState(t, e.get(t, a.ID), job.StateRunning)
	wantState(t, e.get(t, b.ID), job.StateSucceeded)
}
