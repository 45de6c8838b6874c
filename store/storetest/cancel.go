package storetest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var cancelTests = []test{
	{"Queued", testCancelQueued},
	{"Running", testCancelRunning},
	{"Final", testCancelFinal},
	{"Unknown", testCancelUnknown},
	{"Repeated", testCancelRepeated},
	{"Concurrent", testCancelConcurrent},
	{"RequestWins", testCancelRequestWins},
}

func testCancelQueued(t *testing.T, e *env) {
	j := e.insert(t, job.InsertParams{Kind: "k"})
	e.clk.Advance(time.Second)
	got := e.cancel(t, j.ID)
	for _, c := range []*job.Job{got, e.get(t, j.ID)} {
		wantState(t, c, job.StateCanceled)
		wantTimePtr(t, "finished_at", c.FinishedAt, e.now())
	}
	e.wantKinds(t, j.ID, job.EventQueued, job.EventCanceled)
	e.claimNone(t, job.DefaultQueue)
}

func testCancelRunning(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k"})
	c := e.claimOne(t, job.DefaultQueue)
	got := e.cancel(t, c.ID)
	for _, j := range []*job.Job{got, e.get(t, c.ID)} {
		wantState(t, j, job.StateRunning)
		if !j.CancelRequested || j.LeaseToken != c.LeaseToken {
			t.Fatalf("canceled running job: cancel_requested %v token %s, want true and the holder's %s", j.CancelRequested, j.LeaseToken, c.LeaseToken)
		}
		wantNil(t, "finished_at", j.FinishedAt)
	}
	canceled, err := e.s.JobSetProgress(t.Context(), leaseOf(c), job.Progress{Done: 1, Total: 2})
	if err != nil || !canceled {
		t.Fatalf("JobSetProgress after cancel: canceled %v err %v, want true, nil", canceled, err)
	}
	res, err := e.s.JobHeartbeat(t.Context(), owner, []store.Lease{leaseOf(c)})
	if err != nil || len(res) != 1 || !res[0].Held || !res[0].CancelRequested {
		t.Fatalf("JobHeartbeat after cancel: %+v %v, want held with cancel requested", res, err)
	}
	e.finishOne(t, store.Outcome{Lease: leaseOf(c), Outcome: job.Outcome{Status: store.OutcomeCanceled}})
	wantState(t, e.get(t, c.ID), job.StateCanceled)
	e.claimNone(t, job.DefaultQueue)
}

func testCancelFinal(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k"})
	succeeded := e.claimOne(t, job.DefaultQueue)
	e.finishOne(t, store.Outcome{Lease: leaseOf(succeeded), Outcome: job.Outcome{Status: store.OutcomeSucceeded, Result: json.RawMessage(`{"ok": true}`)}})
	e.insert(t, job.InsertParams{Kind: "k"})
	failed := e.claimOne(t, job.DefaultQueue)
	e.fail(t, failed, false, 0)
	canceled := e.insert(t, job.InsertParams{Kind: "k"})
	e.cancel(t, canceled.ID)

	for _, id := range []uuid.UUID{succeeded.ID, failed.ID, canceled.ID} {
		before := e.get(t, id)
		e.clk.Advance(time.Second)
		_, err := e.s.JobCancel(t.Context(), id)
		wantErr(t, "JobCancel of a "+string(before.State)+" job", err, job.ErrWrongState)
		after := e.get(t, id)
		unchanged(t, before, after)
		if after.CancelRequested {
			t.Fatalf("JobCancel of a %s job set cancel_requested", before.State)
		}
	}
}

func testCancelUnknown(t *testing.T, e *env) {
	_, err := e.s.JobCancel(t.Context(), uuid.Must(uuid.NewV7()))
	wantErr(t, "JobCancel of an unknown job", err, job.ErrNotFound)
}

// testCancelRepeated: cancelling a running job whose cancel was already
// requested returns it and writes nothing, not even a journal entry.
func testCancelRepeated(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k"})
	c := e.claimOne(t, job.DefaultQueue)
	e.cancel(t, c.ID)
	before := e.get(t, c.ID)
	e.clk.Advance(time.Second) // a write would move updated_at
	for range 2 {
		again := e.cancel(t, c.ID)
		if again.ID != c.ID || again.State != job.StateRunning || !again.CancelRequested {
			t.Fatalf("repeated cancel returned %s state %q cancel_requested %v, want %s running with cancel requested",
				again.ID, again.State, again.CancelRequested, c.ID)
		}
		unchanged(t, before, again)
		unchanged(t, before, e.get(t, c.ID))
	}
	e.wantKinds(t, c.ID, job.EventQueued, job.EventClaimed, job.EventCancelRequested)
}

// testCancelConcurrent: operators cancelling one running job at the same
// time all get the job back, and the request is journaled once.
func testCancelConcurrent(t *testing.T, e *env) {
	const operators = 8
	for round := range 5 {
		queue := fmt.Sprintf("q%d", round)
		e.insert(t, job.InsertParams{Queue: queue, Kind: "k"})
		c := e.claimOne(t, queue)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range operators {
			wg.Go(func() {
				<-start
				j, err := e.s.JobCancel(t.Context(), c.ID)
				if err != nil {
					t.Errorf("concurrent JobCancel: %v", err)
				} else if j.State != job.StateRunning || !j.CancelRequested {
					t.Errorf("concurrent JobCancel returned state %q cancel_requested %v, want running with cancel requested", j.State, j.CancelRequested)
				}
			})
		}
		close(start)
		wg.Wait()
		if t.Failed() {
			return
		}
		e.wantKinds(t, c.ID, job.EventQueued, job.EventClaimed, job.EventCancelRequested)
	}
}

// testCancelRequestWins: once cancel was requested, a job never goes back
// to the queue: a failure (retryable or not), a release and an expired
// lease all end it canceled, journaled "canceled". A success still counts.
func testCancelRequestWins(t *testing.T, e *env) {
	cases := []struct {
		name     string
		attempts int
		outcome  func(c *job.Job) store.Outcome // nil: the lease expires
		want     job.State
	}{
		{"retryable failure", 5, func(c *job.Job) store.Outcome {
			return store.Outcome{Lease: leaseOf(c), Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "boom", Retryable: true, RetryDelay: time.Minute}}
		}, job.StateCanceled},
		{"failure at the last attempt", 1, func(c *job.Job) store.Outcome {
			return store.Outcome{Lease: leaseOf(c), Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "boom", Retryable: true}}
		}, job.StateCanceled},
		{"permanent failure", 5, func(c *job.Job) store.Outcome {
			return store.Outcome{Lease: leaseOf(c), Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "boom"}}
		}, job.StateCanceled},
		{"release", 5, releaseOf, job.StateCanceled},
		{"success", 5, func(c *job.Job) store.Outcome { return outcomeSucceeded(c, `{"done": true}`) }, job.StateSucceeded},
		{"expired lease", 5, nil, job.StateCanceled},
	}
	for i, tc := range cases {
		queue := fmt.Sprintf("q%d", i)
		e.insert(t, job.InsertParams{Queue: queue, Kind: "k", MaxAttempts: tc.attempts, LeaseTTL: time.Minute})
		c := e.claimOne(t, queue)
		e.cancel(t, c.ID)
		e.clk.Advance(time.Second)
		if tc.outcome != nil {
			o := tc.outcome(c)
			if res := e.finishOne(t, o); res.State != tc.want {
				t.Fatalf("%s after a cancel request: finish result state %q, want %q", tc.name, res.State, tc.want)
			}
		} else {
			e.clk.Advance(time.Minute)
			if n := e.rescue(t, 10); n != 1 {
				t.Fatalf("%s after a cancel request: rescued %d, want 1", tc.name, n)
			}
		}
		j := e.get(t, c.ID)
		wantFinished(t, j, tc.want, e.now())
		if j.Attempt != 1 {
			t.Fatalf("%s after a cancel request: attempt %d, want 1", tc.name, j.Attempt)
		}
		if tc.outcome != nil && tc.outcome(c).Status == store.OutcomeFailed && j.LastError != "boom" {
			t.Fatalf("%s after a cancel request: last_error %q, want the failure's %q", tc.name, j.LastError, "boom")
		}
		last := job.EventKind(tc.want)
		e.wantKinds(t, c.ID, job.EventQueued, job.EventClaimed, job.EventCancelRequested, last)
		e.clk.Advance(2 * time.Minute) // past any retry delay
		e.claimNone(t, queue)
	}
}
