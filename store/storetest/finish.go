package storetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var finishTests = []test{
	{"Succeeded", testFinishSucceeded},
	{"FailedRetryable", testFinishFailedRetryable},
	{"FailedAttemptsUsed", testFinishFailedAttemptsUsed},
	{"FailedNotRetryable", testFinishFailedNotRetryable},
	{"Canceled", testFinishCanceled},
	{"Released", testFinishReleased},
	{"ReleasedAtLastAttempt", testFinishReleasedLastAttempt},
	{"SameLeaseTwice", testFinishSameLeaseTwice},
	{"Unstorable", testFinishUnstorable},
}

// wantFinished checks what every final state shares.
func wantFinished(t *testing.T, j *job.Job, state job.State, at time.Time) {
	t.Helper()
	wantState(t, j, state)
	wantTimePtr(t, "finished_at", j.FinishedAt, at)
	wantStamp(t, "updated_at", j.UpdatedAt, at)
	if j.LeaseToken != uuid.Nil {
		t.Fatalf("finished job keeps lease token %s", j.LeaseToken)
	}
	wantNil(t, "lease_expires_at of a finished job", j.LeaseExpiresAt)
}

func testFinishSucceeded(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k"})
	c := e.claimOne(t, job.DefaultQueue)
	e.clk.Advance(3 * time.Second)
	res := e.finishOne(t, store.Outcome{Lease: leaseOf(c), Outcome: job.Outcome{Status: store.OutcomeSucceeded, Result: json.RawMessage(`{"rows": 12}`)}})
	if res.State != job.StateSucceeded {
		t.Fatalf("finish result state %q, want succeeded", res.State)
	}
	j := e.get(t, c.ID)
	wantFinished(t, j, job.StateSucceeded, e.now())
	wantJSON(t, "result", j.Result, []byte(`{"rows": 12}`))
	if j.Attempt != 1 {
		t.Fatalf("attempt = %d, want 1", j.Attempt)
	}
	e.wantKinds(t, c.ID, job.EventQueued, job.EventClaimed, job.EventSucceeded)
	e.claimNone(t, job.DefaultQueue)
}

func testFinishFailedRetryable(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k", MaxAttempts: 3})
	c := e.claimOne(t, job.DefaultQueue)
	e.clk.Advance(time.Second)
	res := e.finishOne(t, store.Outcome{Lease: leaseOf(c), Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "disk full", Retryable: true, RetryDelay: 30 * time.Second}})
	due := e.now().Add(30 * time.Second)
	if res.State != job.StateQueued {
		t.Fatalf("finish result state %q, want queued", res.State)
	}
	wantTime(t, "finish result run_at", res.RunAt, due)
	j := e.get(t, c.ID)
	wantState(t, j, job.StateQueued)
	wantTime(t, "run_at", j.RunAt, due)
	wantNil(t, "finished_at", j.FinishedAt)
	if j.LastError != "disk full" || j.Attempt != 1 || j.LeaseToken != uuid.Nil {
		t.Fatalf("retried job: last_error %q attempt %d token %s; want %q, 1, none", j.LastError, j.Attempt, j.LeaseToken, "disk full")
	}
	e.wantKinds(t, c.ID, job.EventQueued, job.EventClaimed, job.EventRetried)
	wantDetail(t, e.events(t, c.ID)[2], "disk full")

	e.clk.Advance(29 * time.Second)
	e.claimNone(t, job.DefaultQueue)
	e.clk.Advance(2 * time.Second)
	if again := e.claimOne(t, job.DefaultQueue); again.ID != c.ID || again.Attempt != 2 {
		t.Fatalf("claim after the delay: %s attempt %d, want %s attempt 2", again.ID, again.Attempt, c.ID)
	}
}

func testFinishFailedAttemptsUsed(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k", MaxAttempts: 2})
	if res := e.fail(t, e.claimOne(t, job.DefaultQueue), true, 0); res.State != job.StateQueued {
		t.Fatalf("first failure: state %q, want queued", res.State)
	}
	c := e.claimOne(t, job.DefaultQueue)
	if c.Attempt != 2 {
		t.Fatalf("second claim: attempt %d, want 2", c.Attempt)
	}
	if res := e.fail(t, c, true, 0); res.State != job.StateFailed {
		t.Fatalf("failure at max_attempts: state %q, want failed", res.State)
	}
	j := e.get(t, c.ID)
	wantFinished(t, j, job.StateFailed, e.now())
	if j.LastError != "boom" {
		t.Fatalf("last_error = %q, want %q", j.LastError, "boom")
	}
	e.wantKinds(t, c.ID, job.EventQueued, job.EventClaimed, job.EventRetried, job.EventClaimed, job.EventFailed)
	e.claimNone(t, job.DefaultQueue)
}

func testFinishFailedNotRetryable(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k", MaxAttempts: 5})
	c := e.claimOne(t, job.DefaultQueue)
	if res := e.fail(t, c, false, time.Minute); res.State != job.StateFailed {
		t.Fatalf("permanent failure: state %q, want failed", res.State)
	}
	j := e.get(t, c.ID)
	wantFinished(t, j, job.StateFailed, e.now())
	if j.LastError != "boom" {
		t.Fatalf("last_error = %q, want %q", j.LastError, "boom")
	}
	e.wantKinds(t, c.ID, job.EventQueued, job.EventClaimed, job.EventFailed)
	e.clk.Advance(2 * time.Minute)
	e.claimNone(t, job.DefaultQueue)
}

func testFinishCanceled(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k"})
	c := e.claimOne(t, job.DefaultQueue)
	e.cancel(t, c.ID)
	res := e.finishOne(t, store.Outcome{Lease: leaseOf(c), Outcome: job.Outcome{Status: store.OutcomeCanceled}})
	if res.State != job.StateCanceled {
		t.Fatalf("finish result state %q, want canceled", res.State)
	}
	wantFinished(t, e.get(t, c.ID), job.StateCanceled, e.now())
	if kinds := e.events(t, c.ID); kinds[len(kinds)-1].Kind != job.EventCanceled {
		t.Fatalf("last journal entry %q, want %q", kinds[len(kinds)-1].Kind, job.EventCanceled)
	}
	e.claimNone(t, job.DefaultQueue)
}

func testFinishReleased(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k"})
	c := e.claimOne(t, job.DefaultQueue)
	e.clk.Advance(5 * time.Second)
	res := e.finishOne(t, releaseOf(c))
	if res.State != job.StateQueued {
		t.Fatalf("finish result state %q, want queued", res.State)
	}
	wantTime(t, "finish result run_at", res.RunAt, e.now())
	j := e.get(t, c.ID)
	wantState(t, j, job.StateQueued)
	wantTime(t, "run_at", j.RunAt, e.now())
	if j.LeaseToken != uuid.Nil {
		t.Fatalf("released job keeps lease token %s", j.LeaseToken)
	}
	e.wantKinds(t, c.ID, job.EventQueued, job.EventClaimed, job.EventRequeued)
	if again := e.claimOne(t, job.DefaultQueue); again.ID != c.ID || again.Attempt != c.Attempt {
		t.Fatalf("claim after release: %s attempt %d, want %s with the released attempt %d", again.ID, again.Attempt, c.ID, c.Attempt)
	}
}

// testFinishReleasedLastAttempt: a release does not use up an attempt, even
// the last one.
func testFinishReleasedLastAttempt(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k", MaxAttempts: 1})
	e.finishOne(t, releaseOf(e.claimOne(t, job.DefaultQueue)))
	e.finishOne(t, releaseOf(e.claimOne(t, job.DefaultQueue)))
	c := e.claimOne(t, job.DefaultQueue)
	if c.Attempt != 1 {
		t.Fatalf("claim after two releases: attempt %d, want 1", c.Attempt)
	}
	e.succeed(t, c)
}

// testFinishSameLeaseTwice: of two outcomes for one lease in one batch,
// the first decides and the second reports Lost, whatever their kinds.
func testFinishSameLeaseTwice(t *testing.T, e *env) {
	e.insertN(t, 2, job.InsertParams{Kind: "k", MaxAttempts: 3})
	got := e.claim(t, job.DefaultQueue, 2)
	if len(got) != 2 {
		t.Fatalf("claimed %d, want 2", len(got))
	}
	a, b := got[0], got[1]
	res := e.finish(t,
		store.Outcome{Lease: leaseOf(a), Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "first", Retryable: true}},
		outcomeSucceeded(a, `{"second": true}`),
		outcomeSucceeded(b, `{"first": true}`),
		outcomeSucceeded(b, `{"second": true}`))
	want := []store.FinishResult{{State: job.StateQueued}, {Lost: true}, {State: job.StateSucceeded}, {Lost: true}}
	for i := range want {
		if res[i].Lost != want[i].Lost || res[i].State != want[i].State {
			t.Fatalf("results %+v, want %+v", res, want)
		}
	}
	j := e.get(t, a.ID)
	wantState(t, j, job.StateQueued)
	if j.LastError != "first" || j.Result != nil {
		t.Fatalf("job of the first lease: last_error %q result %s, want the first outcome's", j.LastError, j.Result)
	}
	e.wantKinds(t, a.ID, job.EventQueued, job.EventClaimed, job.EventRetried)
	wantJSON(t, "result", e.get(t, b.ID).Result, []byte(`{"first": true}`))
	e.wantKinds(t, b.ID, job.EventQueued, job.EventClaimed, job.EventSucceeded)
}

// testFinishUnstorable: a batch holding an outcome no store can keep (a
// result with \u0000 or a lone surrogate, which PostgreSQL's jsonb
// refuses; an error text with NUL or invalid UTF-8) is refused whole as a
// *job.ValidationError, before anything is written, on every driver: the
// job keeps running under its lease (store.Refused holds of the error, so
// that a finisher isolates the outcome instead of retrying it).
func testFinishUnstorable(t *testing.T, e *env) {
	e.insertN(t, 2, job.InsertParams{Kind: "k"})
	got := e.claim(t, job.DefaultQueue, 2)
	if len(got) != 2 {
		t.Fatalf("claimed %d, want 2", len(got))
	}
	good, bad := got[0], got[1]
	for _, o := range []store.Outcome{
		{Lease: leaseOf(bad), Outcome: job.Outcome{Status: store.OutcomeSucceeded, Result: json.RawMessage(`{"a":"\u0000"}`)}},
		{Lease: leaseOf(bad), Outcome: job.Outcome{Status: store.OutcomeSucceeded, Result: json.RawMessage(`"\ud800"`)}},
		{Lease: leaseOf(bad), Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "nul \x00 here", Retryable: true}},
		{Lease: leaseOf(bad), Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "byte \xff here"}},
	} {
		before := e.get(t, bad.ID)
		e.clk.Advance(time.Second)
		_, err := e.s.JobFinish(t.Context(), []store.Outcome{outcomeSucceeded(good, `{"ok": true}`), o})
		var ve *job.ValidationError
		if !errors.As(err, &ve) || !store.Refused(err) {
			t.Fatalf("JobFinish with %s %q %q: err = %v, want a *job.ValidationError", o.Status, o.Result, o.Error, err)
		}
		unchanged(t, before, e.get(t, bad.ID))
		wantState(t, e.get(t, good.ID), job.StateRunning)
	}
	e.succeed(t, good)
	e.succeed(t, bad)
}
