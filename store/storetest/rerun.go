package storetest

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var rerunTests = []test{
	{"Succeeded", testRerunSucceeded},
	{"FailedAndCanceled", testRerunFailedAndCanceled},
	{"Idempotent", testRerunIdempotent},
	{"Concurrent", testRerunConcurrent},
	{"WrongState", testRerunWrongState},
	{"NewArgs", testRerunNewArgs},
	{"BadArgs", testRerunBadArgs},
	{"ActiveTwin", testRerunActiveTwin},
	{"Unknown", testRerunUnknown},
}

func (e *env) rerun(t *testing.T, id uuid.UUID, p store.RerunParams) *job.Job {
	t.Helper()
	j, err := e.s.JobRerun(t.Context(), id, p)
	if err != nil {
		t.Fatalf("JobRerun %s: %v", id, err)
	}
	return j
}

// testRerunSucceeded: a rerun of a succeeded job queues it again with its
// attempts reset and its rerun counter at 1, keeps its result readable
// (as the result and as the previous result) until the claim, which
// clears it and hands it to the new attempt; the journal stores the
// success the row implied before "rerun-requested".
func testRerunSucceeded(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "transcode", Args: json.RawMessage(`{"video": 7}`)})
	c := e.claimOne(t, job.DefaultQueue)
	e.finishOne(t, outcomeSucceeded(c, `{"url": "v7-1.mp4"}`))
	e.clk.Advance(time.Minute)

	got := e.rerun(t, c.ID, store.RerunParams{})
	for _, j := range []*job.Job{got, e.get(t, c.ID)} {
		wantState(t, j, job.StateQueued)
		wantTime(t, "run_at", j.RunAt, e.now())
		wantNil(t, "finished_at", j.FinishedAt)
		if j.Attempt != 0 || j.Rerun != 1 || j.PreviousState != job.StateSucceeded || j.CancelRequested {
			t.Fatalf("rerun job: attempt %d rerun %d previous state %q cancel %v; want 0, 1, succeeded, false",
				j.Attempt, j.Rerun, j.PreviousState, j.CancelRequested)
		}
		wantJSON(t, "result until the claim", j.Result, []byte(`{"url": "v7-1.mp4"}`))
		wantJSON(t, "previous result", j.PreviousResult, []byte(`{"url": "v7-1.mp4"}`))
	}
	e.wantKinds(t, c.ID, job.EventQueued, job.EventClaimed, job.EventSucceeded, job.EventRerunRequested)
	evs := e.events(t, c.ID)
	wantTime(t, "the success's entry", evs[2].At, e.now().Add(-time.Minute))
	rr := evs[3]
	wantTime(t, "rerun-requested at", rr.At, e.now())
	wantDetail(t, rr, "rerun 1")
	if rr.Attempt != 0 {
		t.Fatalf("rerun-requested names attempt %d, want 0", rr.Attempt)
	}

	e.clk.Advance(time.Second)
	again := e.claimOne(t, job.DefaultQueue)
	if again.ID != c.ID || again.Attempt != 1 || again.Rerun != 1 {
		t.Fatalf("claim after rerun: %s attempt %d rerun %d, want %s attempt 1 rerun 1", again.ID, again.Attempt, again.Rerun, c.ID)
	}
	wantJSON(t, "claimed job's previous result", again.PreviousResult, []byte(`{"url": "v7-1.mp4"}`))
	if again.Result != nil {
		t.Fatalf("claimed job's result %s, want none: the claim clears it", again.Result)
	}
	if j := e.get(t, c.ID); j.Result != nil || !jsonEqual(j.PreviousResult, []byte(`{"url": "v7-1.mp4"}`)) {
		t.Fatalf("after the claim: result %s previous %s; want none and the old one", j.Result, j.PreviousResult)
	}
	e.finishOne(t, outcomeSucceeded(again, `{"url": "v7-2.mp4"}`))
	j := e.get(t, c.ID)
	wantJSON(t, "new result", j.Result, []byte(`{"url": "v7-2.mp4"}`))
	e.wantKinds(t, c.ID, job.EventQueued, job.EventClaimed, job.EventSucceeded, job.EventRerunRequested,
		job.EventClaimed, job.EventSucceeded)
}

func testRerunFailedAndCanceled(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k", MaxAttempts: 1})
	failed := e.claimOne(t, job.DefaultQueue)
	e.fail(t, failed, true, 0)
	canceled := e.insert(t, job.InsertParams{Kind: "k"})
	e.cancel(t, canceled.ID)
	for _, c := range []struct {
		id   uuid.UUID
		was  job.State
		last job.EventKind
	}{{failed.ID, job.StateFailed, job.EventFailed}, {canceled.ID, job.StateCanceled, job.EventCanceled}} {
		e.clk.Advance(time.Second)
		j := e.rerun(t, c.id, store.RerunParams{})
		wantState(t, j, job.StateQueued)
		if j.Rerun != 1 || j.PreviousState != c.was || j.Result != nil || j.PreviousResult != nil {
			t.Fatalf("rerun of a %s job: rerun %d previous %q result %s previous result %s", c.was, j.Rerun, j.PreviousState, j.Result, j.PreviousResult)
		}
		evs := e.events(t, c.id)
		if evs[len(evs)-2].Kind != c.last || evs[len(evs)-1].Kind != job.EventRerunRequested {
			t.Fatalf("journal of the rerun %s job: %+v", c.was, evs)
		}
	}
	if n := len(e.claim(t, job.DefaultQueue, 10)); n != 2 {
		t.Fatalf("claimed %d re-run jobs, want 2", n)
	}
}

// testRerunIdempotent: a rerun of a job queued or running because of a
// rerun, without different args, answers it as it is and writes nothing;
// with different args it is refused.
func testRerunIdempotent(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k", Args: json.RawMessage(`{"a": 1}`)})
	c := e.claimOne(t, job.DefaultQueue)
	e.succeed(t, c)
	e.rerun(t, c.ID, store.RerunParams{})
	for _, p := range []store.RerunParams{{}, {Args: json.RawMessage(`{ "a" : 1 }`)}} {
		before := e.get(t, c.ID)
		e.clk.Advance(time.Second)
		again := e.rerun(t, c.ID, p)
		unchanged(t, before, again)
		unchanged(t, before, e.get(t, c.ID))
	}
	running := e.claimOne(t, job.DefaultQueue)
	before := e.get(t, c.ID)
	unchanged(t, before, e.rerun(t, c.ID, store.RerunParams{}))
	_, err := e.s.JobRerun(t.Context(), c.ID, store.RerunParams{Args: json.RawMessage(`{"a": 2}`)})
	wantErr(t, "JobRerun with other args of a re-running job", err, job.ErrWrongState)
	unchanged(t, before, e.get(t, c.ID))
	e.wantKinds(t, c.ID, job.EventQueued, job.EventClaimed, job.EventSucceeded, job.EventRerunRequested, job.EventClaimed)
	e.succeed(t, running)
}

// testRerunConcurrent: reruns sent at once make one rerun.
func testRerunConcurrent(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k"})
	c := e.claimOne(t, job.DefaultQueue)
	e.finishOne(t, outcomeSucceeded(c, `"old"`))
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	got := make([]*job.Job, n)
	for i := range n {
		wg.Go(func() { got[i], errs[i] = e.s.JobRerun(t.Context(), c.ID, store.RerunParams{}) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("rerun %d: %v", i, errs[i])
		}
		if got[i].State != job.StateQueued || got[i].Rerun != 1 {
			t.Fatalf("rerun %d answered %s rerun %d, want queued rerun 1", i, got[i].State, got[i].Rerun)
		}
	}
	e.wantKinds(t, c.ID, job.EventQueued, job.EventClaimed, job.EventSucceeded, job.EventRerunRequested)
}

func testRerunWrongState(t *testing.T, e *env) {
	queued := e.insert(t, job.InsertParams{Queue: "q", Kind: "k"})
	e.insert(t, job.InsertParams{Kind: "k"})
	running := e.claimOne(t, job.DefaultQueue)
	for _, id := range []uuid.UUID{queued.ID, running.ID} {
		before := e.get(t, id)
		_, err := e.s.JobRerun(t.Context(), id, store.RerunParams{})
		wantErr(t, "JobRerun of a "+string(before.State)+" job never re-run", err, job.ErrWrongState)
		unchanged(t, before, e.get(t, id))
	}
}

func testRerunNewArgs(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k", Args: json.RawMessage(`{"v": 1}`)})
	c := e.claimOne(t, job.DefaultQueue)
	e.succeed(t, c)
	j := e.rerun(t, c.ID, store.RerunParams{Args: json.RawMessage(`{"v": 2}`)})
	wantJSON(t, "args", j.Args, []byte(`{"v": 2}`))
	wantJSON(t, "args read back", e.get(t, c.ID).Args, []byte(`{"v": 2}`))
	if ev := e.events(t, c.ID); ev[len(ev)-1].Detail != "rerun 1 with new args" {
		t.Fatalf("rerun entry %+v, want detail %q", ev[len(ev)-1], "rerun 1 with new args")
	}
	if got := e.claimOne(t, job.DefaultQueue); !jsonEqual(got.Args, []byte(`{"v": 2}`)) {
		t.Fatalf("claimed args %s", got.Args)
	}
}

func testRerunBadArgs(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k"})
	c := e.claimOne(t, job.DefaultQueue)
	e.succeed(t, c)
	before := e.get(t, c.ID)
	for _, args := range []string{`[1]`, `"x"`, `{"a":`, `{"a": "\u0000"}`} {
		_, err := e.s.JobRerun(t.Context(), c.ID, store.RerunParams{Args: json.RawMessage(args)})
		var verr *job.ValidationError
		if !errors.As(err, &verr) || verr.Field != "args" {
			t.Fatalf("JobRerun with args %s: %v, want a validation error of args", args, err)
		}
		unchanged(t, before, e.get(t, c.ID))
	}
}

// testRerunActiveTwin: the active-duplicate rule holds for a rerun, with
// the job's args or new ones; the args hash follows new args.
func testRerunActiveTwin(t *testing.T, e *env) {
	p := job.InsertParams{Kind: "parse", Unique: job.UniqueActive, Args: json.RawMessage(`{"file": "a.pdf"}`)}
	first := e.insert(t, p)
	e.succeed(t, e.claimOne(t, job.DefaultQueue))
	twin := e.insert(t, p) // a new twin, since the first one finished
	before := e.get(t, first.ID)
	_, err := e.s.JobRerun(t.Context(), first.ID, store.RerunParams{})
	wantErr(t, "JobRerun with an active twin", err, job.ErrDuplicate)
	unchanged(t, before, e.get(t, first.ID))

	// With other args it is no twin; the hash is the new args'.
	j := e.rerun(t, first.ID, store.RerunParams{Args: json.RawMessage(`{"file": "b.pdf"}`)})
	if j.ArgsHash == "" || j.ArgsHash == twin.ArgsHash {
		t.Fatalf("args hash after a rerun with new args: %q (twin's %q)", j.ArgsHash, twin.ArgsHash)
	}
	res := e.insertMany(t, job.InsertParams{Kind: "parse", Unique: job.UniqueActive, Args: json.RawMessage(`{"file": "b.pdf"}`)})
	if res[0].Created || res[0].Job.ID != first.ID {
		t.Fatalf("submit of b.pdf: created %v job %s, want the re-run job %s", res[0].Created, res[0].Job.ID, first.ID)
	}
}

func testRerunUnknown(t *testing.T, e *env) {
	_, err := e.s.JobRerun(t.Context(), uuid.Must(uuid.NewV7()), store.RerunParams{})
	wantErr(t, "JobRerun of an unknown job", err, job.ErrNotFound)
}
