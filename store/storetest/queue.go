package storetest

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var queueTests = []test{
	{"Counts", testQueueCounts},
	{"PauseUnknown", testQueuePauseUnknown},
	{"Purge", testQueuePurge},
	{"Depth", testQueueDepth},
	{"SchemaVersion", testSchemaVersion},
}

func (e *env) queues(t *testing.T) []store.QueueInfo {
	t.Helper()
	qs, err := e.s.QueueList(t.Context())
	if err != nil {
		t.Fatalf("QueueList: %v", err)
	}
	return qs
}

// wantQueue requires queue name to be listed with paused and counts (states
// absent from counts are zero, and may be absent or zero in the store's
// answer).
func wantQueue(t *testing.T, qs []store.QueueInfo, name string, paused bool, counts map[job.State]int64) {
	t.Helper()
	q := findQueue(qs, name)
	if q == nil {
		t.Fatalf("QueueList %+v lacks queue %q", qs, name)
	}
	if q.Paused != paused {
		t.Fatalf("queue %q: paused = %v, want %v", name, q.Paused, paused)
	}
	for _, s := range job.States {
		if q.Counts[s] != counts[s] {
			t.Fatalf("queue %q: counts %v, want %v", name, q.Counts, counts)
		}
	}
}

func testQueueCounts(t *testing.T, e *env) {
	e.insertN(t, 4, job.InsertParams{Queue: "q1", Kind: "k"})
	got := e.claim(t, "q1", 2)
	if len(got) != 2 {
		t.Fatalf("claimed %d, want 2", len(got))
	}
	e.succeed(t, got[0])
	e.insert(t, job.InsertParams{Queue: "q2", Kind: "k"})
	e.fail(t, e.claimOne(t, "q2"), false, 0)
	c := e.insert(t, job.InsertParams{Queue: "q2", Kind: "k"})
	e.cancel(t, c.ID)
	e.setPaused(t, "q2", true)

	qs := e.queues(t)
	wantQueue(t, qs, "q1", false, map[job.State]int64{job.StateQueued: 2, job.StateRunning: 1, job.StateSucceeded: 1})
	wantQueue(t, qs, "q2", true, map[job.State]int64{job.StateFailed: 1, job.StateCanceled: 1})

	e.setPaused(t, "q2", false)
	wantQueue(t, e.queues(t), "q2", false, map[job.State]int64{job.StateFailed: 1, job.StateCanceled: 1})
}

func testQueuePauseUnknown(t *testing.T, e *env) {
	e.setPaused(t, "planned", true)
	e.setPaused(t, "resumed", true)
	e.setPaused(t, "resumed", false)
	qs := e.queues(t)
	wantQueue(t, qs, "planned", true, nil)
	wantQueue(t, qs, "resumed", false, nil) // a queue with a setting is listed
	e.insert(t, job.InsertParams{Queue: "planned", Kind: "k"})
	e.claimNone(t, "planned")
}

func (e *env) purge(t *testing.T, queue string) int64 {
	t.Helper()
	n, err := e.s.QueuePurge(t.Context(), queue)
	if err != nil {
		t.Fatalf("QueuePurge %q: %v", queue, err)
	}
	return n
}

// testQueuePurge: a purge deletes the queue's queued and finished jobs with
// their journals, leaves its running job to its holder, and touches no
// other queue.
func testQueuePurge(t *testing.T, e *env) {
	const q = "doomed"
	jobs := e.insertN(t, 5, job.InsertParams{Queue: q, Kind: "k"})
	got := e.claim(t, q, 3)
	if len(got) != 3 {
		t.Fatalf("claimed %d, want 3", len(got))
	}
	succeeded, failed, running := got[0], got[1], got[2]
	e.succeed(t, succeeded)
	e.fail(t, failed, false, 0)
	canceled, queued := jobs[3], jobs[4]
	e.cancel(t, canceled.ID)
	e.setPaused(t, q, true)

	other := e.insertN(t, 2, job.InsertParams{Queue: "kept", Kind: "k"})
	e.succeed(t, e.claimOne(t, "kept"))
	before := make(map[uuid.UUID]*job.Job)
	for _, id := range []uuid.UUID{running.ID, other[0].ID, other[1].ID} {
		before[id] = e.get(t, id)
	}

	if n := e.purge(t, q); n != 4 {
		t.Fatalf("purged %d jobs, want 4 (queued, succeeded, failed, canceled)", n)
	}
	for _, id := range []uuid.UUID{queued.ID, succeeded.ID, failed.ID, canceled.ID} {
		e.gone(t, id)
		e.wantKinds(t, id) // no journal left
	}
	for id, b := range before {
		unchanged(t, b, e.get(t, id))
		if len(e.events(t, id)) == 0 {
			t.Fatalf("job %s kept, but its journal was purged", id)
		}
	}
	qs := e.queues(t)
	wantQueue(t, qs, q, true, map[job.State]int64{job.StateRunning: 1}) // the setting stays
	wantQueue(t, qs, "kept", false, map[job.State]int64{job.StateQueued: 1, job.StateSucceeded: 1})

	// The holder of the running job still holds its lease.
	if res := e.heartbeat(t, leaseOf(running)); !res[0].Held {
		t.Fatalf("heartbeat of the running job after the purge: %+v, want held", res[0])
	}
	e.succeed(t, running)
	if n := e.purge(t, q); n != 1 {
		t.Fatalf("second purge took %d jobs, want 1 (the one that finished)", n)
	}
	if n := e.purge(t, q); n != 0 {
		t.Fatalf("third purge took %d jobs, want 0", n)
	}
	if n := e.purge(t, "nobody"); n != 0 {
		t.Fatalf("purge of an unknown queue took %d jobs, want 0", n)
	}
	if n := e.total(t); n != 2 {
		t.Fatalf("%d jobs left, want the other queue's 2", n)
	}
}

// testQueueDepth: a queue's depth counts its queued jobs, due and
// scheduled, and nothing else: not its running or finished jobs, not
// another queue's.
func testQueueDepth(t *testing.T, e *env) {
	depth := func(queue string) store.QueueDepth {
		t.Helper()
		d, err := e.s.QueueDepth(t.Context(), queue)
		if err != nil {
			t.Fatalf("QueueDepth(%q): %v", queue, err)
		}
		return d
	}
	if d := depth("q1"); d != (store.QueueDepth{}) {
		t.Fatalf("unknown queue: depth %+v, want zero", d)
	}
	e.insertN(t, 5, job.InsertParams{Queue: "q1", Kind: "k"})
	e.insertN(t, 2, job.InsertParams{Queue: "q1", Kind: "k", RunAt: e.now().Add(time.Hour)})
	e.insertN(t, 3, job.InsertParams{Queue: "q2", Kind: "k"})
	e.succeed(t, e.claimOne(t, "q1"))
	e.claimOne(t, "q1")
	if d, want := depth("q1"), (store.QueueDepth{Available: 3, Scheduled: 2}); d != want {
		t.Fatalf("q1: depth %+v, want %+v", d, want)
	}
	e.clk.Advance(2 * time.Hour)
	if d, want := depth("q1"), (store.QueueDepth{Available: 5}); d != want {
		t.Fatalf("q1 once the scheduled jobs are due: depth %+v, want %+v", d, want)
	}
	if d, want := depth("q2"), (store.QueueDepth{Available: 3}); d != want {
		t.Fatalf("q2: depth %+v, want %+v", d, want)
	}
}

// testSchemaVersion: a migrated store is at the latest version its
// driver knows.
func testSchemaVersion(t *testing.T, e *env) {
	v, err := e.s.SchemaVersion(t.Context())
	if err != nil {
		t.Fatalf("SchemaVersion: %v", err)
	}
	if v.Latest < 1 || !v.UpToDate() {
		t.Fatalf("schema version %+v of a migrated store, want current = latest >= 1", v)
	}
}
