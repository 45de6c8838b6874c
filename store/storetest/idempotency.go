package storetest

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var idempotencyTests = []test{
	{"KeyReturnsFirstJob", testKeyReturnsFirstJob},
	{"KeyWithinBatch", testKeyWithinBatch},
	{"KeyOfFinishedJob", testKeyOfFinishedJob},
	{"ActiveTwin", testActiveTwin},
	{"ActiveAfterFinish", testActiveAfterFinish},
	{"ActiveDifferentArgs", testActiveDifferentArgs},
	{"ConcurrentKey", testConcurrentKey},
	{"ConcurrentActive", testConcurrentActive},
	{"SameRequestSpelledOtherwise", testKeySameRequest},
	{"Mismatch", testKeyMismatch},
	{"MismatchWritesNothing", testKeyMismatchWritesNothing},
	{"MismatchWithinBatch", testKeyMismatchWithinBatch},
	{"MismatchRunAt", testKeyMismatchRunAt},
	{"MismatchConcurrent", testKeyMismatchConcurrent},
	{"OwnFingerprint", testKeyOwnFingerprint},
	{"FingerprintAfterRerun", testKeyFingerprintAfterRerun},
}

// wantSame requires res to be the existing job first, not a new one.
func wantSame(t *testing.T, what string, res store.InsertResult, first *job.Job) {
	t.Helper()
	if res.Created || res.Job == nil || res.Job.ID != first.ID {
		t.Fatalf("%s: Created %v id %v, want the existing job %s with Created false", what, res.Created, jobID(res.Job), first.ID)
	}
}

func jobID(j *job.Job) any {
	if j == nil {
		return nil
	}
	return j.ID
}

func testKeyReturnsFirstJob(t *testing.T, e *env) {
	first := e.insert(t, job.InsertParams{Kind: "charge", Args: json.RawMessage(`{"n":1}`), IdempotencyKey: "order-42"})
	res := e.insertMany(t, job.InsertParams{Kind: "charge", Args: json.RawMessage(`{"n":1}`), IdempotencyKey: "order-42"})[0]
	wantSame(t, "second insert with the key", res, first)
	wantJSON(t, "args of the matched job", res.Job.Args, first.Args)
	if n := e.total(t); n != 1 {
		t.Fatalf("total = %d, want 1", n)
	}
	e.wantKinds(t, first.ID, job.EventQueued)
}

func testKeyWithinBatch(t *testing.T, e *env) {
	res := e.insertMany(t,
		job.InsertParams{Kind: "charge", IdempotencyKey: "order-7"},
		job.InsertParams{Kind: "other"},
		job.InsertParams{Kind: "charge", IdempotencyKey: "order-7"})
	if !res[0].Created || !res[1].Created {
		t.Fatalf("first two results: Created %v %v, want true true", res[0].Created, res[1].Created)
	}
	wantSame(t, "repeat of the key in the batch", res[2], res[0].Job)
	if n := e.total(t); n != 2 {
		t.Fatalf("total = %d, want 2", n)
	}
}

func testKeyOfFinishedJob(t *testing.T, e *env) {
	first := e.insert(t, job.InsertParams{Kind: "charge", IdempotencyKey: "order-9"})
	e.succeed(t, e.claimOne(t, job.DefaultQueue))
	res := e.insertMany(t, job.InsertParams{Kind: "charge", IdempotencyKey: "order-9"})[0]
	wantSame(t, "key of a succeeded job", res, first)
	wantState(t, res.Job, job.StateSucceeded)
	e.claimNone(t, job.DefaultQueue)
}

func testActiveTwin(t *testing.T, e *env) {
	p := job.InsertParams{Kind: "parse", Unique: job.UniqueActive,
		Args: json.RawMessage(`{"a": 1, "b": {"y": 2, "x": [1, {"k": null}]}, "z": null}`)}
	hash, err := p.Normalize(0)
	if err != nil {
		t.Fatal(err)
	}
	first := e.insert(t, p)
	if first.ArgsHash != hash {
		t.Fatalf("args hash = %q, want %q", first.ArgsHash, hash)
	}
	// The same args with keys reordered and null members dropped.
	twin := job.InsertParams{Kind: "parse", Unique: job.UniqueActive, Args: json.RawMessage(`{"b": {"x": [1, {}], "y": 2}, "a": 1}`)}
	wantSame(t, "twin of a queued job", e.insertMany(t, twin)[0], first)

	// A failed attempt with attempts left is queued again, so still active.
	e.fail(t, e.claimOne(t, job.DefaultQueue), true, 0)
	wantSame(t, "twin of a job queued for retry", e.insertMany(t, twin)[0], first)

	e.claimOne(t, job.DefaultQueue)
	res := e.insertMany(t, twin)[0]
	wantSame(t, "twin of a running job", res, first)
	wantState(t, res.Job, job.StateRunning)
	if n := e.total(t); n != 1 {
		t.Fatalf("total = %d, want 1", n)
	}
}

func testActiveAfterFinish(t *testing.T, e *env) {
	p := job.InsertParams{Kind: "parse", Unique: job.UniqueActive, Args: json.RawMessage(`{"file": "a.pdf"}`)}
	first := e.insert(t, p)
	e.succeed(t, e.claimOne(t, job.DefaultQueue))
	second := e.insert(t, p) // after succeeded
	if second.ID == first.ID {
		t.Fatalf("insert after the twin succeeded returned it")
	}
	e.cancel(t, second.ID)
	third := e.insert(t, p) // after canceled
	e.fail(t, e.claimOne(t, job.DefaultQueue), false, 0)
	fourth := e.insert(t, p) // after failed
	if third.ID == second.ID || fourth.ID == third.ID {
		t.Fatalf("an insert returned a finished twin")
	}
	if n := e.total(t); n != 4 {
		t.Fatalf("total = %d, want 4", n)
	}
}

func testActiveDifferentArgs(t *testing.T, e *env) {
	base := job.InsertParams{Kind: "parse", Unique: job.UniqueActive, Args: json.RawMessage(`{"n": 1}`)}
	e.insert(t, base)
	for _, p := range []job.InsertParams{
		{Kind: "parse", Unique: job.UniqueActive, Args: json.RawMessage(`{"n": 2}`)},
		{Kind: "parse", Unique: job.UniqueActive, Args: json.RawMessage(`{"n": 1, "m": 0}`)},
		{Kind: "render", Unique: job.UniqueActive, Args: json.RawMessage(`{"n": 1}`)},
		{Queue: "other", Kind: "parse", Unique: job.UniqueActive, Args: json.RawMessage(`{"n": 1}`)},
	} {
		e.insert(t, p) // fails unless Created
	}
	if n := e.total(t); n != 5 {
		t.Fatalf("total = %d, want 5", n)
	}
}

func testConcurrentKey(t *testing.T, e *env) {
	concurrentSame(t, e, job.InsertParams{Kind: "charge", IdempotencyKey: "order-1"})
}

func testConcurrentActive(t *testing.T, e *env) {
	concurrentSame(t, e, job.InsertParams{Kind: "parse", Unique: job.UniqueActive, Args: json.RawMessage(`{"file": "a.pdf"}`)})
}

// concurrentSame inserts p from 20 goroutines at once: exactly one creates
// the job and every other gets it back.
func concurrentSame(t *testing.T, e *env, p job.InsertParams) {
	const n = 20
	var (
		wg      sync.WaitGroup
		startCh = make(chan struct{})
		results = make([]store.InsertResult, n)
		errs    = make([]error, n)
	)
	for i := range n {
		wg.Go(func() {
			<-startCh
			res, err := e.s.JobInsertMany(t.Context(), []job.InsertParams{p})
			if err == nil && len(res) == 1 {
				results[i] = res[0]
			}
			errs[i] = err
		})
	}
	close(startCh)
	wg.Wait()
	created := 0
	var id uuid.UUID
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("concurrent insert %d: %v", i, errs[i])
		}
		if results[i].Job == nil {
			t.Fatalf("concurrent insert %d: no job", i)
		}
		if results[i].Created {
			created++
		}
		if i == 0 {
			id = results[i].Job.ID
		} else if results[i].Job.ID != id {
			t.Fatalf("concurrent inserts returned different jobs %s and %s", id, results[i].Job.ID)
		}
	}
	if created != 1 {
		t.Fatalf("%d of %d concurrent inserts report Created, want 1", created, n)
	}
	if total := e.total(t); total != 1 {
		t.Fatalf("total = %d, want 1", total)
	}
}
