package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var repeatTests = []test{
	{"EachOutcome", testRepeatEachOutcome},
	{"OtherOutcome", testRepeatOtherOutcome},
	{"AfterClaimedAgain", testRepeatAfterClaimedAgain},
	{"Owner", testRepeatOwner},
	{"InBatch", testRepeatInBatch},
	{"NotAfterRescue", testRepeatNotAfterRescue},
	{"Backoff", testFinishBackoff},
}

// finishAgain applies o again, whose lease is no longer held, and
// requires it to be answered as a repeat with state want, the job left
// as it was.
func (e *env) finishAgain(t *testing.T, o store.Outcome, want job.State) {
	t.Helper()
	before := e.get(t, o.ID)
	e.clk.Advance(time.Second)
	res := e.finish(t, o)[0]
	if !res.Repeat || res.Lost || res.State != want {
		t.Fatalf("%s of job %s sent again: %+v, want a repeat in state %s", o.Status, o.ID, res, want)
	}
	unchanged(t, before, e.get(t, o.ID))
}

// testRepeatEachOutcome: an outcome sent again with the lease token of
// the attempt it ended, of the same status, is a repeat answered with the
// job's current state, and changes nothing: a success, a retryable
// failure (the job queued again), a failure for good, a throttle, a
// release and a cancel.
func testRepeatEachOutcome(t *testing.T, e *env) {
	cases := []struct {
		name  string
		out   func(j *job.Job) store.Outcome
		state job.State
	}{
		{"succeeded", func(j *job.Job) store.Outcome { return outcomeSucceeded(j, `{"n": 1}`) }, job.StateSucceeded},
		{"failed retryable", func(j *job.Job) store.Outcome {
			return store.Outcome{Lease: leaseOf(j), Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "later", Retryable: true, RetryDelay: time.Hour}}
		}, job.StateQueued},
		{"failed for good", func(j *job.Job) store.Outcome {
			return store.Outcome{Lease: leaseOf(j), Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "never"}}
		}, job.StateFailed},
		{"throttled", func(j *job.Job) store.Outcome {
			return store.Outcome{Lease: leaseOf(j), Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "429", Throttle: time.Minute}}
		}, job.StateQueued},
		{"released", releaseOf, job.StateQueued},
		{"canceled", func(j *job.Job) store.Outcome {
			return store.Outcome{Lease: leaseOf(j), Outcome: job.Outcome{Status: store.OutcomeCanceled}}
		}, job.StateCanceled},
	}
	for i, c := range cases {
		queue := fmt.Sprintf("repeat-%d", i)
		e.insert(t, job.InsertParams{Kind: "k", Queue: queue, MaxAttempts: 3})
		j := e.claimOne(t, queue)
		o := c.out(j)
		if res := e.finishOne(t, o); res.State != c.state || res.Repeat {
			t.Fatalf("%s: first outcome %+v, want state %s", c.name, res, c.state)
		}
		e.finishAgain(t, o, c.state)
		e.finishAgain(t, o, c.state) // and again
	}
}

// testRepeatOtherOutcome: an outcome of another status than the one
// applied, with its token, is still a lost lease; so is any outcome with
// the token of an attempt no outcome ended.
func testRepeatOtherOutcome(t *testing.T, e *env) {
	e.insertN(t, 2, job.InsertParams{Kind: "k", MaxAttempts: 3})
	got := e.claim(t, job.DefaultQueue, 2)
	done, released := got[0], got[1]
	e.succeed(t, done)
	e.finishOne(t, releaseOf(released))
	for _, o := range []store.Outcome{
		{Lease: leaseOf(done), Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "late", Retryable: true}},
		releaseOf(done),
		outcomeSucceeded(released, `{}`),
		{Lease: leaseOf(released), Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "late"}},
	} {
		before := e.get(t, o.ID)
		if res := e.finish(t, o)[0]; !res.Lost || res.Repeat {
			t.Fatalf("%s of job %s after another outcome: %+v, want Lost", o.Status, o.ID, res)
		}
		unchanged(t, before, e.get(t, o.ID))
	}
}

// testRepeatAfterClaimedAgain: a repeat that comes after the job was
// claimed again is still answered as the repeat of the first attempt's
// outcome, with the job's current state, and leaves the new attempt
// alone; once the new attempt's outcome is applied, the first one's is
// forgotten and its repeat is a lost lease.
func testRepeatAfterClaimedAgain(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k", MaxAttempts: 3})
	first := e.claimOne(t, job.DefaultQueue)
	release := releaseOf(first)
	e.finishOne(t, release)
	second := e.claimOne(t, job.DefaultQueue)
	if second.ID != first.ID || second.LeaseToken == first.LeaseToken {
		t.Fatalf("claimed %s token %s again, want %s with a new token", second.ID, second.LeaseToken, first.ID)
	}
	e.finishAgain(t, release, job.StateRunning)
	if j := e.get(t, first.ID); j.LeaseToken != second.LeaseToken || j.State != job.StateRunning {
		t.Fatalf("the new attempt: token %s state %s, want %s running", j.LeaseToken, j.State, second.LeaseToken)
	}
	e.succeed(t, second)
	if res := e.finish(t, release)[0]; !res.Lost {
		t.Fatalf("the first attempt's release after the second's success: %+v, want Lost", res)
	}
	e.finishAgain(t, outcomeSucceeded(second, `{}`), job.StateSucceeded)
}

// testRepeatOwner: a repeat that names an owner must name the one that
// held the attempt; one that names none is fenced by the token alone.
func testRepeatOwner(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k"})
	j := e.claimOne(t, job.DefaultQueue)
	o := outcomeSucceeded(j, `{}`)
	o.Owner = owner
	e.finishOne(t, o)
	e.finishAgain(t, o, job.StateSucceeded)
	other := o
	other.Owner = "someone-else"
	if res := e.finish(t, other)[0]; !res.Lost {
		t.Fatalf("a repeat naming another owner: %+v, want Lost", res)
	}
	anyone := o
	anyone.Owner = ""
	e.finishAgain(t, anyone, job.StateSucceeded)
}

// testRepeatInBatch: in one batch, repeats, new outcomes and lost ones
// each get their own answer, on the successes' path (successes of
// distinct jobs) and on the general one; the same lease twice in the
// batch is still a loss for the second, whatever the row remembers.
func testRepeatInBatch(t *testing.T, e *env) {
	e.insertN(t, 4, job.InsertParams{Kind: "k", MaxAttempts: 3})
	got := e.claim(t, job.DefaultQueue, 4)
	if len(got) != 4 {
		t.Fatalf("claimed %d, want 4", len(got))
	}
	a, b, c, d := got[0], got[1], got[2], got[3]
	e.succeed(t, a)
	e.finishOne(t, releaseOf(b))
	stranger := outcomeSucceeded(a, `{}`)
	stranger.Token = d.LeaseToken // a token that is not a's

	// Successes only, of distinct jobs: a's again, c's new, a stranger.
	res := e.finish(t, outcomeSucceeded(a, `{}`), outcomeSucceeded(c, `{"c": 1}`))
	if !res[0].Repeat || res[0].State != job.StateSucceeded || res[1].Repeat || res[1].State != job.StateSucceeded {
		t.Fatalf("successes' batch: %+v, want a repeat then a success", res)
	}
	// Mixed: b's release again, d's failure, a's success again twice, a
	// lost one.
	res = e.finish(t, releaseOf(b), store.Outcome{Lease: leaseOf(d), Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "x"}},
		outcomeSucceeded(a, `{}`), outcomeSucceeded(a, `{}`), stranger)
	want := []store.FinishResult{
		{Repeat: true, State: job.StateQueued}, {State: job.StateFailed},
		{Repeat: true, State: job.StateSucceeded}, {Lost: true}, {Lost: true},
	}
	for i := range want {
		if res[i].Lost != want[i].Lost || res[i].Repeat != want[i].Repeat || res[i].State != want[i].State {
			t.Fatalf("mixed batch: results %+v, want %+v", res, want)
		}
	}
	wantJSON(t, "result of c", e.get(t, c.ID).Result, []byte(`{"c": 1}`))
}

// testRepeatNotAfterRescue: the token of an attempt whose lease expired
// and was rescued names no outcome applied: any outcome with it is a
// lost lease.
func testRepeatNotAfterRescue(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k", MaxAttempts: 3})
	j := e.claimOne(t, job.DefaultQueue)
	e.clk.Advance(j.LeaseTTL + time.Second)
	if n := e.rescue(t, 10); n != 1 {
		t.Fatalf("rescued %d, want 1", n)
	}
	for _, o := range []store.Outcome{outcomeSucceeded(j, `{}`), releaseOf(j)} {
		if res := e.finish(t, o)[0]; !res.Lost || res.Repeat {
			t.Fatalf("%s after the rescue: %+v, want Lost", o.Status, res)
		}
	}
	wantState(t, e.get(t, j.ID), job.StateQueued)
}

// testFinishBackoff: a retryable failure with a Backoff waits what it
// says for the job's queue and the attempt that failed, read with the
// lease, instead of RetryDelay; a throttle or a failure for good ignores
// it.
func testFinishBackoff(t *testing.T, e *env) {
	type call struct {
		queue   string
		attempt int
	}
	var calls []call
	backoff := func(queue string, attempt int) time.Duration {
		calls = append(calls, call{queue, attempt})
		return time.Duration(attempt) * 7 * time.Second
	}
	e.insert(t, job.InsertParams{Kind: "k", Queue: "backoff", MaxAttempts: 3})
	j := e.claimOne(t, "backoff")
	res := e.finishOne(t, store.Outcome{Lease: leaseOf(j), Backoff: backoff, Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "x", Retryable: true, RetryDelay: time.Hour}})
	if res.State != job.StateQueued {
		t.Fatalf("state %s, want queued", res.State)
	}
	wantTime(t, "run_at after the first attempt", e.get(t, j.ID).RunAt, e.now().Add(7*time.Second))
	e.clk.Advance(7 * time.Second)
	j = e.claimOne(t, "backoff")
	e.finishOne(t, store.Outcome{Lease: leaseOf(j), Backoff: backoff, Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "x", Retryable: true}})
	wantTime(t, "run_at after the second attempt", e.get(t, j.ID).RunAt, e.now().Add(14*time.Second))
	if len(calls) != 2 || calls[0] != (call{"backoff", 1}) || calls[1] != (call{"backoff", 2}) {
		t.Fatalf("Backoff called with %+v, want (backoff, 1) then (backoff, 2)", calls)
	}
	e.clk.Advance(14 * time.Second)
	j = e.claimOne(t, "backoff")
	e.finishOne(t, store.Outcome{Lease: leaseOf(j), Backoff: backoff, Outcome: job.Outcome{Status: store.OutcomeFailed, Error: "x", Throttle: time.Minute}})
	wantTime(t, "run_at after a throttle", e.get(t, j.ID).RunAt, e.now().Add(time.Minute))
	if len(calls) != 2 {
		t.Fatalf("Backoff called for a throttle: %+v", calls)
	}
}
