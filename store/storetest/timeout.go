package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var timeoutTests = []test{
	{"Deadline", testTimeoutDeadline},
	{"QueueDefault", testTimeoutQueueDefault},
	{"LeaseCapped", testTimeoutLeaseCapped},
	{"WritesRefused", testTimeoutWritesRefused},
	{"Retried", testTimeoutRetried},
	{"AttemptsUsed", testTimeoutAttemptsUsed},
	{"CancelWins", testTimeoutCancelWins},
	{"NotRescued", testTimeoutNotRescued},
	{"Limit", testTimeoutLimit},
}

func (e *env) timeOut(t *testing.T, limit int, delay time.Duration) int {
	t.Helper()
	n, err := e.s.JobTimeOut(t.Context(), store.TimeOutParams{Limit: limit,
		RetryDelay: func(string, int) time.Duration { return delay }})
	if err != nil {
		t.Fatalf("JobTimeOut: %v", err)
	}
	return n
}

// testTimeoutDeadline: the claim gives an attempt under a timeout its
// deadline, and a job without one none; a finished attempt has none.
func testTimeoutDeadline(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "limited", Timeout: 30 * time.Second})
	e.insert(t, job.InsertParams{Kind: "free"})
	jobs := e.claim(t, job.DefaultQueue, 2)
	if len(jobs) != 2 {
		t.Fatalf("claimed %d, want 2", len(jobs))
	}
	for _, c := range jobs {
		for _, j := range []*job.Job{c, e.get(t, c.ID)} {
			switch j.Kind {
			case "limited":
				if j.Timeout != 30*time.Second {
					t.Fatalf("timeout %s, want 30s", j.Timeout)
				}
				wantTimePtr(t, "deadline", j.Deadline, e.now().Add(30*time.Second))
				wantTimePtr(t, "lease expiry", j.LeaseExpiresAt, e.now().Add(30*time.Second)) // before the 60s lease
			default:
				if j.Timeout != 0 || j.Deadline != nil {
					t.Fatalf("a job without a timeout: timeout %s deadline %v", j.Timeout, j.Deadline)
				}
			}
		}
		e.succeed(t, c)
		wantNil(t, "deadline once finished", e.get(t, c.ID).Deadline)
	}
}

// testTimeoutQueueDefault: a claim's default timeout bounds the jobs
// without one of their own; a job's own wins.
func testTimeoutQueueDefault(t *testing.T, e *env) {
	own := e.insert(t, job.InsertParams{Kind: "own", Timeout: 2 * time.Minute, LeaseTTL: 5 * time.Minute})
	none := e.insert(t, job.InsertParams{Kind: "none"})
	jobs, err := e.s.JobClaim(t.Context(), store.ClaimParams{Queue: job.DefaultQueue, Max: 2, Owner: owner, DefaultTimeout: 10 * time.Second})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("claim: %d jobs, %v", len(jobs), err)
	}
	for _, j := range []*job.Job{e.get(t, own.ID), e.get(t, none.ID)} {
		want := e.now().Add(10 * time.Second)
		if j.ID == own.ID {
			want = e.now().Add(2 * time.Minute)
		}
		wantTimePtr(t, "deadline of "+j.Kind, j.Deadline, want)
		wantTimePtr(t, "lease expiry of "+j.Kind, j.LeaseExpiresAt, want)
	}
	if j := e.get(t, none.ID); j.Timeout != 0 {
		t.Fatalf("the default is the claim's, not the job's: timeout %s", j.Timeout)
	}
}

// testTimeoutLeaseCapped: renewals never take a lease past the deadline.
func testTimeoutLeaseCapped(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k", Timeout: 90 * time.Second, LeaseTTL: time.Minute})
	c := e.claimOne(t, job.DefaultQueue)
	deadline := e.now().Add(90 * time.Second)
	wantTimePtr(t, "lease at the claim", e.get(t, c.ID).LeaseExpiresAt, e.now().Add(time.Minute))
	e.clk.Advance(20 * time.Second)
	res, err := e.s.JobHeartbeat(t.Context(), owner, []store.Lease{leaseOf(c)})
	if err != nil || !res[0].Held {
		t.Fatalf("heartbeat before the deadline: %+v %v", res, err)
	}
	wantTimePtr(t, "lease after a heartbeat", e.get(t, c.ID).LeaseExpiresAt, e.now().Add(time.Minute))
	e.clk.Advance(50 * time.Second)
	if _, err := e.s.JobSetProgress(t.Context(), leaseOf(c), job.Progress{Done: 1, Total: 2}); err != nil {
		t.Fatalf("progress before the deadline: %v", err)
	}
	wantTimePtr(t, "lease after progress", e.get(t, c.ID).LeaseExpiresAt, deadline)
	if _, err := e.s.JobSetCheckpoint(t.Context(), leaseOf(c), json.RawMessage(`{"at": 1}`)); err != nil {
		t.Fatalf("checkpoint before the deadline: %v", err)
	}
	wantTimePtr(t, "lease after a checkpoint", e.get(t, c.ID).LeaseExpiresAt, deadline)
	if _, err := e.s.JobHeartbeat(t.Context(), owner, []store.Lease{leaseOf(c)}); err != nil {
		t.Fatal(err)
	}
	wantTimePtr(t, "lease after a late heartbeat", e.get(t, c.ID).LeaseExpiresAt, deadline)
}

// testTimeoutWritesRefused: once its deadline has come, an attempt holds
// no lease: its heartbeats, progress, checkpoints and outcomes are
// refused as a lost lease's, even before the reaper ends it.
func testTimeoutWritesRefused(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k", Timeout: time.Minute})
	e.insert(t, job.InsertParams{Kind: "k", Timeout: time.Minute})
	jobs := e.claim(t, job.DefaultQueue, 2)
	e.clk.Advance(time.Minute) // the deadline is reached
	before := e.get(t, jobs[0].ID)
	res, err := e.s.JobHeartbeat(t.Context(), owner, []store.Lease{leaseOf(jobs[0])})
	if err != nil || res[0].Held {
		t.Fatalf("heartbeat at the deadline: %+v %v, want not held", res, err)
	}
	_, err = e.s.JobSetProgress(t.Context(), leaseOf(jobs[0]), job.Progress{Done: 1})
	wantErr(t, "progress at the deadline", err, job.ErrLeaseLost)
	_, err = e.s.JobSetCheckpoint(t.Context(), leaseOf(jobs[0]), json.RawMessage(`{}`))
	wantErr(t, "checkpoint at the deadline", err, job.ErrLeaseLost)
	unchanged(t, before, e.get(t, jobs[0].ID))
	// Both paths of JobFinish: a batch of successes, and the general one.
	for _, out := range []store.Outcome{
		outcomeSucceeded(jobs[0], `"late"`),
		{Lease: leaseOf(jobs[1]), Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "late", Retryable: true}},
	} {
		before := e.get(t, out.ID)
		if r := e.finish(t, out)[0]; !r.Lost {
			t.Fatalf("%s outcome at the deadline: %+v, want Lost", out.Status, r)
		}
		unchanged(t, before, e.get(t, out.ID))
	}
}

// testTimeoutRetried: JobTimeOut ends an overdue attempt: back to the
// queue after the retry delay, its attempt counted, journal "timed-out".
func testTimeoutRetried(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k", Timeout: time.Minute, LeaseTTL: 5 * time.Minute})
	c := e.claimOne(t, job.DefaultQueue)
	e.clk.Advance(59 * time.Second)
	if n := e.timeOut(t, 10, time.Second); n != 0 {
		t.Fatalf("timed out %d before the deadline", n)
	}
	e.clk.Advance(2 * time.Second)
	if n := e.timeOut(t, 10, 30*time.Second); n != 1 {
		t.Fatalf("timed out %d, want 1", n)
	}
	j := e.get(t, c.ID)
	wantState(t, j, job.StateQueued)
	wantTime(t, "run_at", j.RunAt, e.now().Add(30*time.Second))
	if j.Attempt != 1 || j.LeaseToken != uuid.Nil || j.LeaseExpiresAt != nil || j.Deadline != nil {
		t.Fatalf("timed-out job: attempt %d token %s expiry %v deadline %v", j.Attempt, j.LeaseToken, j.LeaseExpiresAt, j.Deadline)
	}
	if j.LastError != "timed out after 1m0s" {
		t.Fatalf("last error %q, want %q", j.LastError, "timed out after 1m0s")
	}
	e.wantKinds(t, c.ID, job.EventQueued, job.EventClaimed, job.EventTimedOut)
	wantDetail(t, e.events(t, c.ID)[2], "timed out after 1m0s")
	e.claimNone(t, job.DefaultQueue)
	e.clk.Advance(30 * time.Second)
	if again := e.claimOne(t, job.DefaultQueue); again.Attempt != 2 {
		t.Fatalf("claim after the time-out: attempt %d, want 2", again.Attempt)
	}
}

func testTimeoutAttemptsUsed(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k", Timeout: time.Minute, MaxAttempts: 1})
	c := e.claimOne(t, job.DefaultQueue)
	e.clk.Advance(time.Minute)
	if n := e.timeOut(t, 10, 0); n != 1 {
		t.Fatalf("timed out %d, want 1", n)
	}
	j := e.get(t, c.ID)
	wantFinished(t, j, job.StateFailed, e.now())
	if j.LastError != "timed out after 1m0s" {
		t.Fatalf("last error %q", j.LastError)
	}
	e.wantKinds(t, c.ID, job.EventQueued, job.EventClaimed, job.EventTimedOut)
}

func testTimeoutCancelWins(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k", Timeout: time.Minute})
	c := e.claimOne(t, job.DefaultQueue)
	e.cancel(t, c.ID)
	e.clk.Advance(time.Minute)
	if n := e.timeOut(t, 10, 0); n != 1 {
		t.Fatalf("timed out %d, want 1", n)
	}
	j := e.get(t, c.ID)
	wantFinished(t, j, job.StateCanceled, e.now())
	e.wantKinds(t, c.ID, job.EventQueued, job.EventClaimed, job.EventCancelRequested, job.EventCanceled)
}

// testTimeoutNotRescued: the reaper's rescue leaves an overdue attempt
// to JobTimeOut, and JobTimeOut leaves an expired lease without a
// deadline to the rescue.
func testTimeoutNotRescued(t *testing.T, e *env) {
	limited := e.insert(t, job.InsertParams{Kind: "k", Timeout: time.Minute, LeaseTTL: time.Minute})
	free := e.insert(t, job.InsertParams{Kind: "k", LeaseTTL: time.Minute})
	e.claim(t, job.DefaultQueue, 2)
	e.clk.Advance(2 * time.Minute)
	if n := e.rescue(t, 10); n != 1 {
		t.Fatalf("rescued %d, want 1 (the job without a deadline)", n)
	}
	wantState(t, e.get(t, free.ID), job.StateQueued)
	wantState(t, e.get(t, limited.ID), job.StateRunning)
	if n := e.timeOut(t, 10, 0); n != 1 {
		t.Fatalf("timed out %d, want 1", n)
	}
	e.wantKinds(t, limited.ID, job.EventQueued, job.EventClaimed, job.EventTimedOut)
	e.wantKinds(t, free.ID, job.EventQueued, job.EventClaimed, job.EventRescued)
}

func testTimeoutLimit(t *testing.T, e *env) {
	e.insertN(t, 5, job.InsertParams{Kind: "k", Timeout: time.Minute})
	e.claim(t, job.DefaultQueue, 5)
	e.clk.Advance(time.Minute)
	if n := e.timeOut(t, 3, 0); n != 3 {
		t.Fatalf("timed out %d, want the limit of 3", n)
	}
	if n := e.timeOut(t, 3, 0); n != 2 {
		t.Fatalf("timed out %d, want the other 2", n)
	}
}
