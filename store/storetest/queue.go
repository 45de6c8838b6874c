package storetest

import (
	"testing"

	"jobd/job"
	"jobd/store"
)

var queueTests = []test{
	{"Counts", testQueueCounts},
	{"PauseUnknown", testQueuePauseUnknown},
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
