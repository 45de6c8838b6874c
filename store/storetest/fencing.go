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
	{"OtherOwner", testFencingOtherOwner},
	{"OtherOwnerInBatch", testFencingOtherOwnerInBatch},
}

// wantFenced makes every lease-holder write with lease, which must not be
// held, and requires each to report the loss and change nothing.
//
// accepted, when given, is the status of the outcome a call applied with
// this lease: sent again, an outcome of that status is a repeat (which
// changes nothing either), and one of any other is lost.
func wantFenced(t *testing.T, e *env, lease store.Lease, accepted ...store.OutcomeStatus) {
	t.Helper()
	wantFencedAs(t, e, lease, owner, accepted...)
}

// wantFencedAs is wantFenced with heartbeats sent as hbOwner.
func wantFencedAs(t *testing.T, e *env, lease store.Lease, hbOwner string, accepted ...store.OutcomeStatus) {
	t.Helper()
	before := e.get(t, lease.ID)
	e.clk.Advance(time.Second) // a write that slipped through would move updated_at

	hb, err := e.s.JobHeartbeat(t.Context(), hbOwner, []store.Lease{lease})
	if err != nil {
		t.Fatalf("JobHeartbeat: %v", err)
	}
	if len(hb) != 1 || hb[0].Held {
		t.Fatalf("heartbeat with a lost lease: %+v, want Held false", hb)
	}
	_, err = e.s.JobSetProgress(t.Context(), lease, job.Progress{Phase: "stale", Done: 9, Total: 9})
	wantErr(t, "JobSetProgress with a lost lease", err, job.ErrLeaseLost)
	_, err = e.s.JobSetCheckpoint(t.Context(), lease, json.RawMessage(`{"stale": true}`))
	wantErr(t, "JobSetCheckpoint with a lost lease", err, job.ErrLeaseLost)
	for _, o := range []store.Outcome{
		{Lease: lease, Outcome: job.Outcome{Status: store.OutcomeSucceeded, Result: json.RawMessage(`{"stale": true}`)}},
		{Lease: lease, Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "stale", Retryable: true}},
		{Lease: lease, Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "stale"}},
		{Lease: lease, Outcome: job.Outcome{Status: store.OutcomeCanceled}},
		{Lease: lease, Outcome: job.Outcome{Status: store.OutcomeReleased}},
	} {
		res := e.finish(t, o)
		if repeat := len(accepted) > 0 && accepted[0] == o.Status; repeat != res[0].Repeat || repeat == res[0].Lost {
			t.Fatalf("JobFinish %s with a lost lease: %+v, want Lost unless it repeats the outcome applied (%v)", o.Status, res[0], accepted)
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

	e.finishOne(t, store.Outcome{Lease: leaseOf(cur), Outcome: job.Outcome{Status: store.OutcomeSucceeded, Result: json.RawMessage(`{"by": "new"}`)}})
	// The stale holder cannot overwrite the new holder's result either.
	wantFenced(t, e, leaseOf(old))
	j := e.get(t, old.ID)
	wantState(t, j, job.StateSucceeded)
	wantJSON(t, "result", j.Result, []byte(`{"by": "new"}`))
}

func testFencingAfterFinish(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k"})
	c := e.claimOne(t, job.DefaultQueue)
	e.finishOne(t, store.Outcome{Lease: leaseOf(c), Outcome: job.Outcome{Status: store.OutcomeSucceeded, Result: json.RawMessage(`{"n": 1}`)}})
	wantFenced(t, e, leaseOf(c), store.OutcomeSucceeded) // a finished job's own token is spent

	e.insert(t, job.InsertParams{Kind: "k"})
	r := e.claimOne(t, job.DefaultQueue)
	e.finishOne(t, releaseOf(r))
	wantFenced(t, e, leaseOf(r), store.OutcomeReleased) // so is a released one's
}

func testFencingMixedBatch(t *testing.T, e *env) {
	e.insertN(t, 2, job.InsertParams{Kind: "k"})
	got := e.claim(t, job.DefaultQueue, 2)
	if len(got) != 2 {
		t.Fatalf("claimed %d, want 2", len(got))
	}
	a, b := got[0], got[1]
	res := e.finish(t,
		store.Outcome{Lease: store.Lease{ID: a.ID, Token: uuid.New()}, Outcome: job.Outcome{Status: store.OutcomeSucceeded}},
		store.Outcome{Lease: leaseOf(b), Outcome: job.Outcome{Status: store.OutcomeSucceeded, Result: json.RawMessage(`{"ok": true}`)}})
	if !res[0].Lost || res[1].Lost || res[1].State != job.StateSucceeded {
		t.Fatalf("mixed batch results %+v, want [Lost, succeeded]", res)
	}
	wantState(t, e.get(t, a.ID), job.StateRunning)
	wantState(t, e.get(t, b.ID), job.StateSucceeded)
}

// testFencingOtherOwner: a claimer that presents another claimer's lease
// token, naming itself as the owner, is refused every write (heartbeat,
// progress, checkpoint, every outcome): the owner is part of the fence.
// The claim's owner still holds the lease.
func testFencingOtherOwner(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k"})
	jobs, err := e.s.JobClaim(t.Context(), claimParams(job.DefaultQueue, 1, "worker-a"))
	if err != nil || len(jobs) != 1 {
		t.Fatalf("JobClaim as worker-a: %v, %d jobs", err, len(jobs))
	}
	c := jobs[0]
	if c.LeaseOwner != "worker-a" {
		t.Fatalf("lease owner %q, want worker-a", c.LeaseOwner)
	}
	stolen := store.Lease{ID: c.ID, Token: c.LeaseToken, Owner: "worker-b"}
	wantFencedAs(t, e, stolen, "worker-b")
	// A heartbeat of worker-b naming no owner in the lease is fenced by
	// the caller's owner.
	hb, err := e.s.JobHeartbeat(t.Context(), "worker-b", []store.Lease{{ID: c.ID, Token: c.LeaseToken}})
	if err != nil || len(hb) != 1 || hb[0].Held {
		t.Fatalf("worker-b's heartbeat of worker-a's lease: %+v, %v; want not held", hb, err)
	}
	if j := e.get(t, c.ID); j.LeaseOwner != "worker-a" {
		t.Fatalf("lease owner after worker-b's writes: %q, want worker-a", j.LeaseOwner)
	}

	own := leaseOf(c)
	hb, err = e.s.JobHeartbeat(t.Context(), "worker-a", []store.Lease{own})
	if err != nil || len(hb) != 1 || !hb[0].Held {
		t.Fatalf("worker-a's heartbeat: %+v, %v; want held", hb, err)
	}
	if _, err := e.s.JobSetProgress(t.Context(), own, job.Progress{Done: 1, Total: 2}); err != nil {
		t.Fatalf("worker-a's progress: %v", err)
	}
	if _, err := e.s.JobSetCheckpoint(t.Context(), own, json.RawMessage(`{"page": 1}`)); err != nil {
		t.Fatalf("worker-a's checkpoint: %v", err)
	}
	res := e.finishOne(t, store.Outcome{Lease: own, Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "boom", Retryable: true}})
	wantState(t, e.get(t, c.ID), res.State)
	if res.State != job.StateQueued {
		t.Fatalf("worker-a's retryable failure: state %q, want queued", res.State)
	}
}

// testFencingOtherOwnerInBatch: in one JobFinish batch, on the hot path
// (successes only) and on the general one, an outcome naming the wrong
// owner is Lost and the others apply; an outcome naming the right owner
// after a wrong one for the same lease still applies.
func testFencingOtherOwnerInBatch(t *testing.T, e *env) {
	e.insertN(t, 4, job.InsertParams{Kind: "k"})
	got, err := e.s.JobClaim(t.Context(), claimParams(job.DefaultQueue, 4, "worker-a"))
	if err != nil || len(got) != 4 {
		t.Fatalf("JobClaim as worker-a: %v, %d jobs", err, len(got))
	}
	wrong := func(j *job.Job) store.Lease { l := leaseOf(j); l.Owner = "worker-b"; return l }

	res := e.finish(t,
		store.Outcome{Lease: wrong(got[0]), Outcome: job.Outcome{Status: store.OutcomeSucceeded, Result: json.RawMessage(`{"by": "b"}`)}},
		store.Outcome{Lease: leaseOf(got[1]), Outcome: job.Outcome{Status: store.OutcomeSucceeded, Result: json.RawMessage(`{"by": "a"}`)}})
	if !res[0].Lost || res[1].Lost {
		t.Fatalf("successes: %+v, want [Lost, applied]", res)
	}
	wantState(t, e.get(t, got[0].ID), job.StateRunning)
	wantState(t, e.get(t, got[1].ID), job.StateSucceeded)

	res = e.finish(t,
		store.Outcome{Lease: wrong(got[2]), Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "by b"}},
		store.Outcome{Lease: leaseOf(got[2]), Outcome: job.Outcome{Status: store.OutcomeSucceeded, Result: json.RawMessage(`{"by": "a"}`)}},
		store.Outcome{Lease: wrong(got[3]), Outcome: job.Outcome{Status: store.OutcomeReleased}},
		store.Outcome{Lease: leaseOf(got[0]), Outcome: job.Outcome{Status: store.OutcomeCanceled}})
	if !res[0].Lost || res[1].Lost || !res[2].Lost || res[3].Lost {
		t.Fatalf("mixed outcomes: %+v, want [Lost, applied, Lost, applied]", res)
	}
	j := e.get(t, got[2].ID)
	wantState(t, j, job.StateSucceeded)
	wantJSON(t, "result", j.Result, []byte(`{"by": "a"}`))
	wantState(t, e.get(t, got[3].ID), job.StateRunning)
	wantState(t, e.get(t, got[0].ID), job.StateCanceled)
}
