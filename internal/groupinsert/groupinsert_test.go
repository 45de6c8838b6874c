package groupinsert_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/internal/groupinsert"
	"github.com/jobd/jobd/internal/testutil/pgtest"
	"github.com/jobd/jobd/internal/testutil/teststore"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// gated is a real store whose JobInsertMany calls are recorded; while
// hold is set a call waits for it to close, and fail, when set, may
// refuse a batch before the store sees it.
type gated struct {
	store.Store
	mu      sync.Mutex
	batches []int
	hold    chan struct{}
	entered chan int // each held call's batch size
	fail    func([]job.InsertParams) error
}

func (g *gated) JobInsertMany(ctx context.Context, ps []job.InsertParams) ([]store.InsertResult, error) {
	g.mu.Lock()
	g.batches = append(g.batches, len(ps))
	hold, fail := g.hold, g.fail
	g.mu.Unlock()
	if hold != nil {
		g.entered <- len(ps)
		<-hold
	}
	if fail != nil {
		if err := fail(ps); err != nil {
			return nil, err
		}
	}
	return g.Store.JobInsertMany(ctx, ps)
}

// release lets the held call go on and no later call wait.
func (g *gated) release() {
	g.mu.Lock()
	h := g.hold
	g.hold = nil
	g.mu.Unlock()
	close(h)
}

func (g *gated) batchSizes() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]int(nil), g.batches...)
}

func params(i int) job.InsertParams {
	p := job.InsertParams{Queue: "q", Kind: "k", Args: []byte(fmt.Sprintf(`{"i":%d}`, i))}
	if _, err := p.Normalize(1 << 20); err != nil {
		panic(err)
	}
	return p
}

// sameJSON compares two JSON texts as a store may give them back
// (PostgreSQL's jsonb adds spaces).
func sameJSON(a, b []byte) bool {
	var ca, cb bytes.Buffer
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && ca.String() == cb.String()
}

// result is one Insert's answer.
type result struct {
	res store.InsertResult
	err error
}

// holdFirst starts an Insert of params(0) on g, one flusher, whose batch
// the store holds; it returns once the store has it, with where its
// answer will arrive.
func holdFirst(t *testing.T, st store.Store) (*gated, *groupinsert.Inserter, chan result) {
	t.Helper()
	return holdFirstWith(t, st, 1, 0)
}

// holdFirstWith is holdFirst on an Inserter of flushers that starts
// another after stallAfter (0: the default).
func holdFirstWith(t *testing.T, st store.Store, flushers int, stallAfter time.Duration) (*gated, *groupinsert.Inserter, chan result) {
	t.Helper()
	gs := &gated{Store: st, hold: make(chan struct{}), entered: make(chan int, 1)}
	g := groupinsert.New(gs, flushers, 0)
	if stallAfter > 0 {
		g.SetStallAfter(stallAfter)
	}
	first := make(chan result, 1)
	go func() {
		r, err := g.Insert(context.Background(), params(0))
		first <- result{r, err}
	}()
	if n := <-gs.entered; n != 1 {
		t.Fatalf("first batch: %d jobs, want 1", n)
	}
	return gs, g, first
}

// queueInserts starts an Insert per params while the first batch is
// held, and returns once all of them wait in the queue.
func queueInserts(t *testing.T, g *groupinsert.Inserter, ctxs []context.Context, ps []job.InsertParams) []chan result {
	t.Helper()
	all := make(chan struct{})
	g.OnQueued(func(n int) {
		if n == len(ps) {
			close(all)
		}
	})
	out := make([]chan result, len(ps))
	for i, p := range ps {
		out[i] = make(chan result, 1)
		go func() {
			r, err := g.Insert(ctxs[i], p)
			out[i] <- result{r, err}
		}()
	}
	<-all
	return out
}

func background(n int) []context.Context {
	ctxs := make([]context.Context, n)
	for i := range ctxs {
		ctxs[i] = context.Background()
	}
	return ctxs
}

// TestInsertsWhileABatchCommitsFormTheNext: with the flusher busy, the
// inserts that arrive wait and are committed together, in one
// JobInsertMany, each caller getting its own job.
func TestInsertsWhileABatchCommitsFormTheNext(t *testing.T) {
	teststore.Each(t, func(t *testing.T, st store.Store) {
		gs, g, first := holdFirst(t, st)
		const waiting = 50
		ps := make([]job.InsertParams, waiting)
		for i := range ps {
			ps[i] = params(i + 1)
		}
		answers := queueInserts(t, g, background(waiting), ps)
		gs.release()
		if r := <-first; r.err != nil || !r.res.Created {
			t.Fatalf("first insert: %+v", r)
		}
		ids := map[uuid.UUID]bool{}
		for i, a := range answers {
			r := <-a
			if r.err != nil || !r.res.Created || !sameJSON(r.res.Job.Args, ps[i].Args) {
				t.Fatalf("insert %d: %+v, want its own new job", i, r)
			}
			ids[r.res.Job.ID] = true
		}
		if len(ids) != waiting {
			t.Fatalf("%d distinct jobs for %d inserts", len(ids), waiting)
		}
		if got := gs.batchSizes(); len(got) != 2 || got[1] != waiting {
			t.Fatalf("batches %v, want [1 %d]", got, waiting)
		}
		stored, err := st.JobList(context.Background(), store.ListParams{Queue: "q", Limit: 100})
		if err != nil || stored.Total != waiting+1 {
			t.Fatalf("stored %d jobs (%v), want %d", stored.Total, err, waiting+1)
		}
	})
}

// TestSameKeyInOneBatch: two callers with one idempotency key in one
// batch get one job: one of them created it, the other is told it
// existed, as when they come one after the other.
func TestSameKeyInOneBatch(t *testing.T) {
	teststore.Each(t, func(t *testing.T, st store.Store) {
		gs, g, first := holdFirst(t, st)
		a := params(1)
		a.IdempotencyKey = "k1"
		answers := queueInserts(t, g, background(2), []job.InsertParams{a, a})
		gs.release()
		<-first
		ra, rb := <-answers[0], <-answers[1]
		if ra.err != nil || rb.err != nil || ra.res.Job.ID != rb.res.Job.ID || ra.res.Created == rb.res.Created {
			t.Fatalf("same key: %+v and %+v, want one job, created once", ra, rb)
		}
	})
}

// TestMismatchInOneBatch: of two callers with one idempotency key and
// different requests in one batch, one (whichever queued first) creates
// the job and the other is refused (job.ErrIdempotencyMismatch), as when
// they come one after the other; a third caller of the batch gets its
// own job.
func TestMismatchInOneBatch(t *testing.T) {
	teststore.Each(t, func(t *testing.T, st store.Store) {
		gs, g, first := holdFirst(t, st)
		a, b := params(1), params(2)
		a.IdempotencyKey, b.IdempotencyKey = "k1", "k1"
		answers := queueInserts(t, g, background(3), []job.InsertParams{a, b, params(3)})
		gs.release()
		<-first
		ra, rb, rc := <-answers[0], <-answers[1], <-answers[2]
		if rb.err == nil {
			ra, rb = rb, ra
		}
		if ra.err != nil || !ra.res.Created {
			t.Fatalf("first of the key: %+v, want a new job", ra)
		}
		if !errors.Is(rb.err, job.ErrIdempotencyMismatch) {
			t.Fatalf("the key with another request: %+v, want job.ErrIdempotencyMismatch", rb)
		}
		if rc.err != nil || !rc.res.Created {
			t.Fatalf("a third caller: %+v, want its own new job", rc)
		}
	})
}

// TestCallerThatLeftIsNotInserted: a caller whose context ends while its
// insert waits for a batch gets its context's error, and its job is never
// stored; the others of the batch are.
func TestCallerThatLeftIsNotInserted(t *testing.T) {
	teststore.Each(t, func(t *testing.T, st store.Store) {
		gs, g, first := holdFirst(t, st)
		ctx, cancel := context.WithCancel(context.Background())
		ctxs := []context.Context{ctx, context.Background()}
		answers := queueInserts(t, g, ctxs, []job.InsertParams{params(1), params(2)})
		cancel()
		if r := <-answers[0]; !errors.Is(r.err, context.Canceled) {
			t.Fatalf("caller that left: %+v, want context.Canceled", r)
		}
		gs.release()
		<-first
		if r := <-answers[1]; r.err != nil || !r.res.Created {
			t.Fatalf("caller that stayed: %+v", r)
		}
		stored, err := st.JobList(context.Background(), store.ListParams{Queue: "q", Limit: 100})
		if err != nil || stored.Total != 2 {
			t.Fatalf("stored %d jobs (%v), want 2: the first and the one that stayed", stored.Total, err)
		}
		for _, j := range stored.Jobs {
			if sameJSON(j.Args, params(1).Args) {
				t.Fatalf("the job of the caller that left was stored")
			}
		}
	})
}

// TestOneBadJobFailsOnlyItsCaller: when a batch fails for a reason that
// is not an outage, each job is tried alone, so only the caller of the
// job the store refuses gets the error.
func TestOneBadJobFailsOnlyItsCaller(t *testing.T) {
	teststore.Each(t, func(t *testing.T, st store.Store) {
		gs, g, first := holdFirst(t, st)
		refused := errors.New("refused by the store")
		gs.fail = func(ps []job.InsertParams) error {
			for _, p := range ps {
				if p.Kind == "bad" {
					return refused
				}
			}
			return nil
		}
		bad := params(2)
		bad.Kind = "bad"
		answers := queueInserts(t, g, background(3), []job.InsertParams{params(1), bad, params(3)})
		gs.release()
		<-first
		for i, a := range answers {
			r := <-a
			if i == 1 {
				if !errors.Is(r.err, refused) {
					t.Fatalf("bad job: %+v, want the store's error", r)
				}
				continue
			}
			if r.err != nil || !r.res.Created {
				t.Fatalf("good job %d: %+v", i, r)
			}
		}
	})
}

// TestOutageFailsTheWholeBatch: when the database is unavailable, every
// caller of the batch is told so at once, without a try per job.
func TestOutageFailsTheWholeBatch(t *testing.T) {
	teststore.Each(t, func(t *testing.T, st store.Store) {
		gs, g, first := holdFirst(t, st)
		gs.fail = func([]job.InsertParams) error {
			return store.Mark(errors.New("connection refused"), store.ErrUnavailable)
		}
		answers := queueInserts(t, g, background(3), []job.InsertParams{params(1), params(2), params(3)})
		gs.release()
		<-first
		for i, a := range answers {
			if r := <-a; !errors.Is(r.err, store.ErrUnavailable) {
				t.Fatalf("insert %d: %+v, want ErrUnavailable", i, r)
			}
		}
		if got := gs.batchSizes(); len(got) != 2 {
			t.Fatalf("batches %v: an outage must not be retried job by job", got)
		}
	})
}

// TestOneBatchCommitsAtATime: while a batch commits, the inserts that
// arrive wait for it and form the next batch together, though more
// flushers are allowed, as long as the batch is not slow.
func TestOneBatchCommitsAtATime(t *testing.T) {
	teststore.Each(t, func(t *testing.T, st store.Store) {
		gs, g, first := holdFirstWith(t, st, 4, time.Hour)
		const waiting = 20
		ps := make([]job.InsertParams, waiting)
		for i := range ps {
			ps[i] = params(i + 1)
		}
		answers := queueInserts(t, g, background(waiting), ps)
		gs.release()
		if r := <-first; r.err != nil || !r.res.Created {
			t.Fatalf("first insert: %+v", r)
		}
		for i, a := range answers {
			if r := <-a; r.err != nil || !r.res.Created {
				t.Fatalf("insert %d: %+v", i, r)
			}
		}
		if got := gs.batchSizes(); len(got) != 2 || got[1] != waiting {
			t.Fatalf("batches %v, want [1 %d]", got, waiting)
		}
	})
}

// TestSlowBatchDoesNotHoldUpTheNext: a batch that does not end (a row
// lock it waits for, say) holds up the inserts behind it for stallAfter
// only: then another flusher commits them.
func TestSlowBatchDoesNotHoldUpTheNext(t *testing.T) {
	teststore.Each(t, func(t *testing.T, st store.Store) {
		gs, g, first := holdFirstWith(t, st, 2, time.Millisecond)
		gs.mu.Lock()
		held := gs.hold
		gs.hold = nil // the next batch goes through
		gs.mu.Unlock()

		// A deadline for a test that would otherwise hang, not a timing
		// assertion.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r, err := g.Insert(ctx, params(1))
		if err != nil || !r.Created {
			t.Fatalf("insert behind the held batch: %+v %v", r, err)
		}
		select {
		case r := <-first:
			t.Fatalf("the held batch answered %+v before it was let go", r)
		default:
		}
		close(held)
		if r := <-first; r.err != nil || !r.res.Created {
			t.Fatalf("first insert: %+v", r)
		}
	})
}
