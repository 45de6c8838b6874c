package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var lockTests = []test{
	{"OneRunningPerKey", testLockOneRunning},
	{"FreedByRetryAndRelease", testLockFreed},
	{"Concurrent", testLockConcurrent},
}

func testLockOneRunning(t *testing.T, e *env) {
	l1 := e.insert(t, job.InsertParams{Kind: "k", LockKey: "L"})
	l2 := e.insert(t, job.InsertParams{Kind: "k", LockKey: "L"})
	l3 := e.insert(t, job.InsertParams{Kind: "k", LockKey: "L"})
	m := e.insert(t, job.InsertParams{Kind: "k", LockKey: "M"})
	free := e.insertN(t, 3, job.InsertParams{Kind: "k"}) // no lock key: never serialised

	got := e.claim(t, job.DefaultQueue, 10)
	wantIDSet(t, "first claim", got, append([]*job.Job{l1, m}, free...)...)
	e.claimNone(t, job.DefaultQueue) // l2 and l3 wait for l1

	running := e.get(t, l1.ID)
	e.succeed(t, running)
	wantIDs(t, "claim after l1 finished", e.claim(t, job.DefaultQueue, 10), l2)
	e.claimNone(t, job.DefaultQueue)
	e.succeed(t, e.get(t, l2.ID))
	wantIDs(t, "claim after l2 finished", e.claim(t, job.DefaultQueue, 10), l3)
}

// testLockFreed: a job that leaves running by a retry or a release no longer
// holds its lock key.
func testLockFreed(t *testing.T, e *env) {
	l1 := e.insert(t, job.InsertParams{Kind: "k", LockKey: "L"})
	l2 := e.insert(t, job.InsertParams{Kind: "k", LockKey: "L"})
	e.fail(t, e.claimOne(t, job.DefaultQueue), true, time.Hour)
	c := e.claimOne(t, job.DefaultQueue)
	if c.ID != l2.ID {
		t.Fatalf("claimed %s, want %s once %s waits for its retry", c.ID, l2.ID, l1.ID)
	}
	e.finishOne(t, releaseOf(c))
	if c = e.claimOne(t, job.DefaultQueue); c.ID != l2.ID {
		t.Fatalf("claimed %s, want the released %s", c.ID, l2.ID)
	}
}

// testLockConcurrent: 8 claimers at once, over jobs on three lock keys,
// never run two jobs of one key. Between rounds some running jobs finish and
// others keep their key, so each round also races against held keys.
func testLockConcurrent(t *testing.T, e *env) {
	const keys, perKey, claimers = 3, 8, 8
	var params []job.InsertParams
	for i := range keys * perKey {
		params = append(params, job.InsertParams{Kind: "k", LockKey: fmt.Sprintf("lock-%d", i%keys)})
	}
	e.insertMany(t, params...)

	succeeded := 0
	for round := 0; succeeded < keys*perKey; round++ {
		if round > 10*keys*perKey {
			t.Fatalf("no progress: %d of %d jobs succeeded after %d rounds", succeeded, keys*perKey, round)
		}
		var (
			wg      sync.WaitGroup
			startCh = make(chan struct{})
			claimed = make([][]*job.Job, claimers)
			errs    = make([]error, claimers)
		)
		for g := range claimers {
			wg.Go(func() {
				<-startCh
				claimed[g], errs[g] = e.s.JobClaim(t.Context(), claimParams(job.DefaultQueue, 2, fmt.Sprintf("claimer-%d", g)))
			})
		}
		close(startCh)
		wg.Wait()
		for g := range claimers {
			if errs[g] != nil {
				t.Fatalf("round %d claimer %d: %v", round, g, errs[g])
			}
		}

		running := e.list(t, store.ListParams{States: []job.State{job.StateRunning}, Limit: 100}).Jobs
		byKey := map[string]*job.Job{}
		for _, j := range running {
			if other := byKey[j.LockKey]; other != nil {
				t.Fatalf("round %d: jobs %s and %s of lock key %q run at once", round, other.ID, j.ID, j.LockKey)
			}
			byKey[j.LockKey] = j
		}
		for g := range claimers {
			for _, j := range claimed[g] {
				if r := byKey[j.LockKey]; r == nil || r.ID != j.ID {
					t.Fatalf("round %d: claimed %s of lock key %q, but %v runs under that key", round, j.ID, j.LockKey, jobID(r))
				}
			}
		}
		// Finish every running job but the one of key round%keys, which keeps
		// its key through the next round.
		for _, j := range running {
			if j.LockKey == fmt.Sprintf("lock-%d", round%keys) {
				continue
			}
			e.succeed(t, j)
			succeeded++
		}
	}
}
