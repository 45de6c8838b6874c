package storetest

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// The idempotency key's request rule (the IETF idempotency-key draft's):
// a key names the job of one request. The same request, however it is
// spelled, gets that job back; another request with the key is refused
// with job.ErrIdempotencyMismatch, writes nothing and learns nothing of
// the job.

// charge is the request the tests below send first.
func charge(key string) job.InsertParams {
	return job.InsertParams{Queue: "billing", Kind: "charge", Args: json.RawMessage(`{"order":42,"lines":[1,2]}`),
		Requires: []string{"pci", "eu"}, IdempotencyKey: key}
}

// testKeySameRequest: members spelled otherwise (defaults given, args'
// keys and requires in another order, another traceparent) are the same
// request.
func testKeySameRequest(t *testing.T, e *env) {
	first := e.insert(t, charge("k"))
	same := job.InsertParams{Queue: "billing", Kind: "charge", Args: json.RawMessage(` { "lines" : [1,2], "order" : 42 } `),
		Requires: []string{"eu", "pci", "eu"}, Priority: prio(job.DefaultPriority), MaxAttempts: job.DefaultMaxAttempts,
		LeaseTTL: job.DefaultLeaseTTL, IdempotencyKey: "k",
		TraceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	wantSame(t, "the same request spelled otherwise", e.insertMany(t, same)[0], first)
	if n := e.total(t); n != 1 {
		t.Fatalf("total = %d, want 1", n)
	}
}

// testKeyMismatch: a change of any member that decides the job is another
// request.
func testKeyMismatch(t *testing.T, e *env) {
	first := e.insert(t, charge("k"))
	for name, change := range map[string]func(p *job.InsertParams){
		"args":          func(p *job.InsertParams) { p.Args = json.RawMessage(`{"order":43,"lines":[1,2]}`) },
		"args member":   func(p *job.InsertParams) { p.Args = json.RawMessage(`{"order":42,"lines":[1,2],"x":1}`) },
		"queue":         func(p *job.InsertParams) { p.Queue = "default" },
		"kind":          func(p *job.InsertParams) { p.Kind = "refund" },
		"priority":      func(p *job.InsertParams) { p.Priority = prio(1) },
		"max attempts":  func(p *job.InsertParams) { p.MaxAttempts = 9 },
		"lease ttl":     func(p *job.InsertParams) { p.LeaseTTL = 5 * time.Minute },
		"timeout":       func(p *job.InsertParams) { p.Timeout = time.Minute },
		"lock key":      func(p *job.InsertParams) { p.LockKey = "order-42" },
		"partition key": func(p *job.InsertParams) { p.PartitionKey = "tenant-1" },
		"unique":        func(p *job.InsertParams) { p.Unique = job.UniqueActive },
		"requires":      func(p *job.InsertParams) { p.Requires = []string{"pci"} },
		"prefers":       func(p *job.InsertParams) { p.Prefers = []string{"gpu"} },
		"callback url":  func(p *job.InsertParams) { p.CallbackURL = "https://example.com/done" },
		"run at":        func(p *job.InsertParams) { p.RunAt = e.now().Add(time.Hour) },
	} {
		p := charge("k")
		change(&p)
		res, err := e.s.JobInsertMany(t.Context(), []job.InsertParams{p})
		if !errors.Is(err, job.ErrIdempotencyMismatch) {
			t.Fatalf("%s changed: JobInsertMany = %v, %v; want job.ErrIdempotencyMismatch", name, res, err)
		}
		if strings.Contains(err.Error(), first.ID.String()) {
			t.Fatalf("%s changed: the error %q names the job of the key", name, err)
		}
	}
	if n := e.total(t); n != 1 {
		t.Fatalf("total = %d, want 1", n)
	}
	unchanged(t, first, e.get(t, first.ID))
}

// testKeyMismatchWritesNothing: a batch with one mismatch writes none of
// its jobs.
func testKeyMismatchWritesNothing(t *testing.T, e *env) {
	e.insert(t, charge("k"))
	other := charge("k")
	other.Kind = "refund"
	_, err := e.s.JobInsertMany(t.Context(), []job.InsertParams{{Kind: "fresh"}, charge("k2"), other})
	wantErr(t, "a batch with a mismatch", err, job.ErrIdempotencyMismatch)
	if n := e.total(t); n != 1 {
		t.Fatalf("total = %d after a refused batch, want 1", n)
	}
	e.insert(t, charge("k2")) // its key was not taken
}

// testKeyMismatchWithinBatch: two requests of one key in one batch.
func testKeyMismatchWithinBatch(t *testing.T, e *env) {
	other := charge("k")
	other.Args = json.RawMessage(`{}`)
	_, err := e.s.JobInsertMany(t.Context(), []job.InsertParams{charge("k"), other})
	wantErr(t, "two requests of one key in a batch", err, job.ErrIdempotencyMismatch)
	if n := e.total(t); n != 0 {
		t.Fatalf("total = %d after a refused batch, want 0", n)
	}
}

// testKeyMismatchRunAt: an omitted run_at (now) is not a given one, even
// now; a given one is the same request in any zone.
func testKeyMismatchRunAt(t *testing.T, e *env) {
	e.insert(t, charge("now"))
	at := charge("now")
	at.RunAt = e.now()
	_, err := e.s.JobInsertMany(t.Context(), []job.InsertParams{at})
	wantErr(t, "run_at given after one omitted", err, job.ErrIdempotencyMismatch)

	later := charge("later")
	later.RunAt = e.now().Add(time.Hour)
	first := e.insert(t, later)
	later.RunAt = later.RunAt.In(time.FixedZone("UTC+5", 5*3600))
	wantSame(t, "run_at in another zone", e.insertMany(t, later)[0], first)
	later.RunAt = time.Time{}
	_, err = e.s.JobInsertMany(t.Context(), []job.InsertParams{later})
	wantErr(t, "run_at omitted after one given", err, job.ErrIdempotencyMismatch)
}

// testKeyMismatchConcurrent: concurrent inserts of one key with two
// requests make one job; those of its request get it, the others are
// refused.
func testKeyMismatchConcurrent(t *testing.T, e *env) {
	const n = 20
	reqs := [2]job.InsertParams{charge("k"), charge("k")}
	reqs[1].Args = json.RawMessage(`{"order":43}`)
	var (
		wg      sync.WaitGroup
		startCh = make(chan struct{})
		results = make([]store.InsertResult, n)
		errs    = make([]error, n)
	)
	for i := range n {
		wg.Go(func() {
			<-startCh
			res, err := e.s.JobInsertMany(t.Context(), []job.InsertParams{reqs[i%2]})
			if err == nil {
				results[i] = res[0]
			}
			errs[i] = err
		})
	}
	close(startCh)
	wg.Wait()
	winner := -1
	for i := range n {
		if results[i].Created {
			if winner >= 0 {
				t.Fatalf("inserts %d and %d both created a job of one key", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatalf("no concurrent insert created the job: errors %v", errs)
	}
	for i := range n {
		switch {
		case i%2 == winner%2 && errs[i] != nil:
			t.Fatalf("insert %d of the winner's request: %v", i, errs[i])
		case i%2 == winner%2 && results[i].Job.ID != results[winner].Job.ID:
			t.Fatalf("insert %d of the winner's request got job %s, want %s", i, results[i].Job.ID, results[winner].Job.ID)
		case i%2 != winner%2 && !errors.Is(errs[i], job.ErrIdempotencyMismatch):
			t.Fatalf("insert %d of the other request: %v, %v; want job.ErrIdempotencyMismatch", i, results[i].Job, errs[i])
		}
	}
	if total := e.total(t); total != 1 {
		t.Fatalf("total = %d, want 1", total)
	}
}

// testKeyOwnFingerprint: a request's own fingerprint (a service's, whose
// jobs hold parts that vary between sendings) decides, not the job's
// members.
func testKeyOwnFingerprint(t *testing.T, e *env) {
	p := charge("k")
	p.IdempotencyFingerprint = "request-1"
	first := e.insert(t, p)
	p.Args = json.RawMessage(`{"order":42,"sent":"again"}`)
	wantSame(t, "another job of the same fingerprint", e.insertMany(t, p)[0], first)
	p.IdempotencyFingerprint = "request-2"
	_, err := e.s.JobInsertMany(t.Context(), []job.InsertParams{p})
	wantErr(t, "another fingerprint", err, job.ErrIdempotencyMismatch)
}

// testKeyFingerprintAfterRerun: a re-run with new args leaves the key to
// the request that made the job.
func testKeyFingerprintAfterRerun(t *testing.T, e *env) {
	first := e.insert(t, charge("k"))
	e.cancel(t, first.ID)
	if _, err := e.s.JobRerun(t.Context(), first.ID, store.RerunParams{Args: json.RawMessage(`{"order":7}`)}); err != nil {
		t.Fatalf("JobRerun: %v", err)
	}
	wantSame(t, "the first request after a re-run", e.insertMany(t, charge("k"))[0], first)
	other := charge("k")
	other.Args = json.RawMessage(`{"order":7}`)
	_, err := e.s.JobInsertMany(t.Context(), []job.InsertParams{other})
	wantErr(t, "the re-run's args", err, job.ErrIdempotencyMismatch)
}

// CheckUnfingerprinted holds a driver to the rule for a job stored before
// fingerprints were kept: it matches any request of its key. clear sets
// the fingerprint of job id to NULL, as the schema of before held it.
func CheckUnfingerprinted(t *testing.T, s store.Store, clear func(t *testing.T, id uuid.UUID)) {
	t.Helper()
	res, err := s.JobInsertMany(t.Context(), []job.InsertParams{charge("legacy")})
	if err != nil {
		t.Fatalf("insert: %v", err)
	}
	first := res[0].Job
	clear(t, first.ID)
	other := charge("legacy")
	other.Kind, other.Args = "refund", json.RawMessage(`{}`)
	res, err = s.JobInsertMany(t.Context(), []job.InsertParams{other})
	if err != nil {
		t.Fatalf("another request of an unfingerprinted job's key: %v", err)
	}
	wantSame(t, "another request of an unfingerprinted job's key", res[0], first)
}
