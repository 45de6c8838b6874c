package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
)

var retryTests = []test{
	{"Failed", testRetryFailed},
	{"Canceled", testRetryCanceled},
	{"WrongState", testRetryWrongState},
	{"Unknown", testRetryUnknown},
	{"ActiveTwin", testRetryActiveTwin},
}

func (e *env) retry(t *testing.T, id uuid.UUID) *job.Job {
	t.Helper()
	j, err := e.s.JobRetry(t.Context(), id)
	if err != nil {
		t.Fatalf("JobRetry %s: %v", id, err)
	}
	return j
}

// wantRetried checks that an operator retry of id queued it afresh and that
// it can be claimed again, as attempt 1.
func wantRetried(t *testing.T, e *env, id uuid.UUID) {
	t.Helper()
	e.clk.Advance(time.Minute)
	before := len(e.events(t, id))
	got := e.retry(t, id)
	for _, j := range []*job.Job{got, e.get(t, id)} {
		wantState(t, j, job.StateQueued)
		wantTime(t, "run_at", j.RunAt, e.now())
		wantNil(t, "finished_at", j.FinishedAt)
		if j.Attempt != 0 {
			t.Fatalf("attempt after retry = %d, want 0", j.Attempt)
		}
	}
	evs := e.events(t, id)
	if len(evs) != before+1 || evs[len(evs)-1].Kind != job.EventManualRetry {
		t.Fatalf("journal after retry %+v, want one more entry, %q", evs, job.EventManualRetry)
	}
	if c := e.claimOne(t, job.DefaultQueue); c.ID != id || c.Attempt != 1 {
		t.Fatalf("claim after retry: %s attempt %d, want %s attempt 1", c.ID, c.Attempt, id)
	}
}

func testRetryFailed(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k", MaxAttempts: 1})
	c := e.claimOne(t, job.DefaultQueue)
	e.fail(t, c, true, 0) // attempts used up
	wantState(t, e.get(t, c.ID), job.StateFailed)
	wantRetried(t, e, c.ID)
}

func testRetryCanceled(t *testing.T, e *env) {
	j := e.insert(t, job.InsertParams{Kind: "k"})
	e.cancel(t, j.ID)
	wantRetried(t, e, j.ID)
}

func testRetryWrongState(t *testing.T, e *env) {
	queued := e.insert(t, job.InsertParams{Queue: "q", Kind: "k"})
	e.insert(t, job.InsertParams{Kind: "k"})
	running := e.claimOne(t, job.DefaultQueue)
	e.insert(t, job.InsertParams{Kind: "k"})
	succeeded := e.claimOne(t, job.DefaultQueue)
	e.finishOne(t, outcomeSucceeded(succeeded, `{"n": 1}`))

	for _, id := range []uuid.UUID{queued.ID, running.ID, succeeded.ID} {
		before := e.get(t, id)
		e.clk.Advance(time.Second)
		_, err := e.s.JobRetry(t.Context(), id)
		wantErr(t, "JobRetry of a "+string(before.State)+" job", err, job.ErrWrongState)
		unchanged(t, before, e.get(t, id))
	}
}

func testRetryUnknown(t *testing.T, e *env) {
	_, err := e.s.JobRetry(t.Context(), uuid.Must(uuid.NewV7()))
	wantErr(t, "JobRetry of an unknown job", err, job.ErrNotFound)
}

// testRetryActiveTwin: retrying a failed job while a twin with its args
// hash is active would make two active duplicates.
func testRetryActiveTwin(t *testing.T, e *env) {
	p := job.InsertParams{Kind: "parse", Unique: job.UniqueActive, Args: json.RawMessage(`{"file": "a.pdf"}`)}
	first := e.insert(t, p)
	e.fail(t, e.claimOne(t, job.DefaultQueue), false, 0)
	e.insert(t, p) // a new twin, since the first one finished
	before := e.get(t, first.ID)
	_, err := e.s.JobRetry(t.Context(), first.ID)
	wantErr(t, "JobRetry with an active twin", err, job.ErrDuplicate)
	unchanged(t, before, e.get(t, first.ID))
}
