package storetest

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// takeTests hold the calls the async gateway manages its results with:
// fetch-once (JobTake), retention of one queue (JobPruneQueue) and the
// oldest-first list.
var takeTests = []test{
	{"FinishedOnce", testTakeFinishedOnce},
	{"ActiveRefused", testTakeActiveRefused},
	{"Concurrent", testTakeConcurrent},
	{"PruneQueueCutoff", testPruneQueueCutoff},
	{"PruneQueueLimit", testPruneQueueLimit},
	{"OldestFirst", testListOldestFirst},
}

func (e *env) take(t *testing.T, id uuid.UUID) *job.Job {
	t.Helper()
	j, err := e.s.JobTake(t.Context(), id)
	if err != nil {
		t.Fatalf("JobTake %s: %v", id, err)
	}
	return j
}

func (e *env) pruneQueue(t *testing.T, queue string, before time.Time, limit int) int {
	t.Helper()
	n, err := e.s.JobPruneQueue(t.Context(), queue, before, limit)
	if err != nil {
		t.Fatalf("JobPruneQueue %q: %v", queue, err)
	}
	return n
}

// testTakeFinishedOnce: each final state can be taken, once; the job
// comes back whole, and it and its journal are gone afterwards.
func testTakeFinishedOnce(t *testing.T, e *env) {
	e.insert(t, job.InsertParams{Kind: "k", Args: []byte(`{"n":1}`)})
	succeeded := e.claimOne(t, job.DefaultQueue)
	e.finishOne(t, outcomeSucceeded(succeeded, `{"status":200}`))
	e.insert(t, job.InsertParams{Kind: "k"})
	failed := e.claimOne(t, job.DefaultQueue)
	e.fail(t, failed, false, 0)
	canceled := e.insert(t, job.InsertParams{Kind: "k"})
	e.cancel(t, canceled.ID)
	other := e.insert(t, job.InsertParams{Kind: "k"})

	got := e.take(t, succeeded.ID)
	wantState(t, got, job.StateSucceeded)
	wantJSON(t, "taken result", got.Result, []byte(`{"status":200}`))
	wantJSON(t, "taken args", got.Args, []byte(`{"n":1}`))
	if got.FinishedAt == nil || got.Attempt != 1 {
		t.Fatalf("taken job %+v: want its finished_at and attempt 1", got)
	}
	wantState(t, e.take(t, failed.ID), job.StateFailed)
	if got := e.take(t, canceled.ID); got.State != job.StateCanceled {
		t.Fatalf("taken %s: state %q, want canceled", got.ID, got.State)
	}
	for _, id := range []uuid.UUID{succeeded.ID, failed.ID, canceled.ID} {
		e.gone(t, id)
		e.wantKinds(t, id)
		_, err := e.s.JobTake(t.Context(), id)
		wantErr(t, "second JobTake", err, job.ErrNotFound)
	}
	_, err := e.s.JobTake(t.Context(), uuid.New())
	wantErr(t, "JobTake of an unknown id", err, job.ErrNotFound)
	wantState(t, e.get(t, other.ID), job.StateQueued)
	if len(e.events(t, other.ID)) == 0 {
		t.Fatalf("the journal of an untouched job went with the taken ones")
	}
}

// testTakeActiveRefused: a queued or running job is not taken, and nothing
// of it changes.
func testTakeActiveRefused(t *testing.T, e *env) {
	queued := e.insert(t, job.InsertParams{Queue: "idle", Kind: "k"})
	e.insert(t, job.InsertParams{Kind: "k"})
	running := e.claimOne(t, job.DefaultQueue)
	for _, j := range []*job.Job{queued, running} {
		before := e.get(t, j.ID)
		_, err := e.s.JobTake(t.Context(), j.ID)
		wantErr(t, "JobTake of a "+string(before.State)+" job", err, job.ErrWrongState)
		unchanged(t, before, e.get(t, j.ID))
		if len(e.events(t, j.ID)) == 0 {
			t.Fatalf("JobTake refused %s but deleted its journal", j.ID)
		}
	}
	// Once it finishes, it can be taken.
	e.succeed(t, running)
	wantState(t, e.take(t, running.ID), job.StateSucceeded)
}

// testTakeConcurrent: of several concurrent takes of one job, exactly one
// gets it; the others find nothing.
func testTakeConcurrent(t *testing.T, e *env) {
	j := e.insert(t, job.InsertParams{Kind: "k"})
	e.cancel(t, j.ID)
	const takers = 4
	var (
		wg         sync.WaitGroup
		mu         sync.Mutex
		got, empty int
		errs       []error
	)
	for range takers {
		wg.Go(func() {
			_, err := e.s.JobTake(t.Context(), j.ID)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				got++
			case isNotFound(err):
				empty++
			default:
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 || got != 1 || empty != takers-1 {
		t.Fatalf("%d takers: %d got the job, %d found nothing, errors %v; want 1, %d, none", takers, got, empty, errs, takers-1)
	}
}

// testPruneQueueCutoff: only finished jobs of the queue, finished before
// the cutoff, go; other queues and active jobs stay.
func testPruneQueueCutoff(t *testing.T, e *env) {
	t0 := e.now()
	finish := func(queue string) *job.Job {
		e.insert(t, job.InsertParams{Queue: queue, Kind: "k"})
		j := e.claimOne(t, queue)
		e.succeed(t, j)
		return j
	}
	old := finish("gw")
	oldCanceled := e.insert(t, job.InsertParams{Queue: "gw", Kind: "k"})
	e.cancel(t, oldCanceled.ID)
	otherQueue := finish("other")
	queued := e.insert(t, job.InsertParams{Queue: "gw", Kind: "k", RunAt: t0.Add(48 * time.Hour)})
	e.insert(t, job.InsertParams{Queue: "gw", Kind: "k"})
	running := e.claimOne(t, "gw")
	e.clk.Advance(time.Hour)
	recent := finish("gw")

	if n := e.pruneQueue(t, "gw", t0.Add(30*time.Minute), 100); n != 2 {
		t.Fatalf("pruned %d, want 2", n)
	}
	for _, id := range []uuid.UUID{old.ID, oldCanceled.ID} {
		e.gone(t, id)
		e.wantKinds(t, id)
	}
	for _, j := range []*job.Job{otherQueue, queued, running, recent} {
		e.get(t, j.ID)
	}
	// A cutoff in the future takes every finished job of the queue, and
	// still no active one nor another queue's.
	if n := e.pruneQueue(t, "gw", e.now().Add(24*time.Hour), 100); n != 1 {
		t.Fatalf("second prune took %d, want 1", n)
	}
	e.gone(t, recent.ID)
	wantState(t, e.get(t, queued.ID), job.StateQueued)
	wantState(t, e.get(t, running.ID), job.StateRunning)
	wantState(t, e.get(t, otherQueue.ID), job.StateSucceeded)
}

func testPruneQueueLimit(t *testing.T, e *env) {
	for _, j := range e.insertN(t, 5, job.InsertParams{Queue: "gw", Kind: "k"}) {
		e.cancel(t, j.ID)
	}
	e.clk.Advance(time.Minute)
	for i, want := range []int{2, 2, 1, 0} {
		if n := e.pruneQueue(t, "gw", e.now(), 2); n != want {
			t.Fatalf("prune %d with limit 2: %d jobs, want %d", i, n, want)
		}
	}
	if n := e.pruneQueue(t, "gw", e.now(), 0); n != 0 {
		t.Fatalf("limit 0 pruned %d", n)
	}
	if n := e.total(t); n != 0 {
		t.Fatalf("%d jobs left, want 0", n)
	}
}

// testListOldestFirst: OldestFirst lists by id ascending, with the
// filters and the cursor, and the same total.
func testListOldestFirst(t *testing.T, e *env) {
	var mine []*job.Job
	for i := range 7 {
		mine = append(mine, e.insert(t, job.InsertParams{Queue: "q1", Kind: "k"}))
		if i%2 == 0 {
			e.insert(t, job.InsertParams{Queue: "q2", Kind: "k"})
		}
	}
	// Finishing the oldest does not move it: the order is by id.
	e.succeed(t, e.claimOne(t, "q1"))
	e.wantList(t, "oldest first", store.ListParams{Queue: "q1", OldestFirst: true}, mine...)
	got := pages(t, e, "oldest first", store.ListParams{Queue: "q1", OldestFirst: true}, 3, int64(len(mine)))
	wantIDs(t, "oldest first paged by 3", got, mine...)
	queued := slices.Clone(mine[1:])
	e.wantList(t, "queued, oldest first",
		store.ListParams{Queue: "q1", States: []job.State{job.StateQueued}, OldestFirst: true}, queued...)
	res := e.list(t, store.ListParams{Queue: "q1", OldestFirst: true, Limit: 2})
	wantIDs(t, "the oldest two", res.Jobs, mine[:2]...)
	if res.Total != int64(len(mine)) {
		t.Fatalf("total %d, want %d", res.Total, len(mine))
	}
}

func isNotFound(err error) bool { return errors.Is(err, job.ErrNotFound) }
