package engine_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/internal/testutil/storewatch"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestTwoNodesOneLockKeyAtATime: two nodes on one PostgreSQL database
// work jobs spread over five lock keys; never do two jobs of one key run
// at once, and every job runs exactly once.
func TestTwoNodesOneLockKeyAtATime(t *testing.T) {
	t.Parallel()
	const jobs, keys = 300, 5
	s := openStore(t, "postgres")

	var (
		mu       sync.Mutex
		busyKeys = make(map[string]uuid.UUID) // lock key -> the job holding it
		starts   = make(map[uuid.UUID]int)
	)
	handler := func(ctx context.Context, j *engine.Job[struct{}]) (string, error) {
		mu.Lock()
		starts[j.ID]++
		if other, busy := busyKeys[j.LockKey]; busy {
			t.Errorf("job %s of lock key %s started while job %s of that key runs", j.ID, j.LockKey, other)
		}
		busyKeys[j.LockKey] = j.ID
		mu.Unlock()

		time.Sleep(time.Millisecond) // a little work, to widen any overlap

		mu.Lock()
		delete(busyKeys, j.LockKey)
		mu.Unlock()
		return j.LockKey, nil
	}
	var engines []*running
	for _, node := range []string{"one", "two"} {
		e := newEngine(t, s, newLogs(t), engine.Config{
			Node:   node,
			Queues: []engine.QueueConfig{{Queue: job.DefaultQueue, Concurrency: 8}},
		})
		engine.Register(e, "locked", handler)
		engines = append(engines, start(t, e))
	}

	params := make([]job.InsertParams, jobs)
	for i := range params {
		params[i] = job.InsertParams{Kind: "locked", LockKey: fmt.Sprintf("key-%d", i%keys)}
	}
	if _, err := s.JobInsertMany(context.Background(), params); err != nil {
		t.Fatalf("insert: %v", err)
	}
	storewatch.Until(t, s, "every job to succeed", func() bool {
		return countState(t, s, job.StateSucceeded) == jobs
	})
	for _, r := range engines {
		if err := r.stop(t); err != nil {
			t.Errorf("Run: %v", err)
		}
	}

	mu.Lock()
	defer mu.Unlock()
	if len(starts) != jobs {
		t.Errorf("%d jobs started, want %d", len(starts), jobs)
	}
	for id, n := range starts {
		if n != 1 {
			t.Errorf("job %s started %d times, want once", id, n)
		}
	}
	for _, st := range []job.State{job.StateQueued, job.StateRunning, job.StateFailed} {
		if n := countState(t, s, st); n != 0 {
			t.Errorf("%d jobs %s, want none", n, st)
		}
	}
}

// countState returns how many jobs are in state.
func countState(t testing.TB, s store.Store, state job.State) int64 {
	t.Helper()
	res, err := s.JobList(context.Background(), store.ListParams{States: []job.State{state}})
	if err != nil {
		t.Fatalf("JobList: %v", err)
	}
	return res.Total
}
