package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestConcurrentClaimers runs 8 goroutines, on two Store values sharing
// one file (so two SQLite writers contend for its lock), claiming and
// finishing a few hundred jobs, some sharing lock keys. No write may fail
// (no SQLITE_BUSY) and every job finishes exactly once.
func TestConcurrentClaimers(t *testing.T) {
	const (
		total    = 400
		claimers = 8
	)
	path := filepath.Join(t.TempDir(), "jobd.db")
	stores := []*Store{openAt(t, path, nil), openAt(t, path, nil)}

	params := make([]job.InsertParams, total)
	for i := range params {
		params[i] = job.InsertParams{Kind: "k", Args: []byte(fmt.Sprintf(`{"n":%d}`, i))}
		if i%4 == 0 {
			params[i].LockKey = fmt.Sprintf("lock-%d", i%5)
		}
	}
	if _, err := stores[0].JobInsertMany(t.Context(), params); err != nil {
		t.Fatal(err)
	}

	var (
		mu       sync.Mutex
		finished = make(map[uuid.UUID]int)
		done     atomic.Int64
		wg       sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for g := range claimers {
		s := stores[g%len(stores)]
		owner := fmt.Sprintf("worker-%d", g)
		wg.Go(func() {
			for done.Load() < total && ctx.Err() == nil {
				jobs, err := s.JobClaim(ctx, store.ClaimParams{Queue: job.DefaultQueue, Max: 7, Owner: owner})
				if err != nil {
					t.Errorf("JobClaim: %v", err)
					cancel()
					return
				}
				if len(jobs) == 0 {
					// The rest is running elsewhere. Wait as a worker
					// would: a claimer that found nothing and claims again
					// at once holds the write lock almost all the time,
					// and SQLite's busy handler, which retries a waiting
					// writer at intervals of up to 100 ms, is not fair to
					// the other Store's writer under load.
					time.Sleep(time.Millisecond)
					continue
				}
				outcomes := make([]store.Outcome, len(jobs))
				for i, j := range jobs {
					outcomes[i] = store.Outcome{Lease: store.Lease{ID: j.ID, Token: j.LeaseToken}, Outcome: job.Outcome{Status: store.OutcomeSucceeded}}
				}
				res, err := s.JobFinish(ctx, outcomes)
				if err != nil {
					t.Errorf("JobFinish: %v", err)
					cancel()
					return
				}
				mu.Lock()
				for i, r := range res {
					if r.Lost || r.State != job.StateSucceeded {
						t.Errorf("job %s: finish %+v, want succeeded", jobs[i].ID, r)
					}
					finished[jobs[i].ID]++
				}
				mu.Unlock()
				done.Add(int64(len(jobs)))
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	if len(finished) != total {
		t.Fatalf("%d jobs finished, want %d", len(finished), total)
	}
	for id, n := range finished {
		if n != 1 {
			t.Fatalf("job %s finished %d times", id, n)
		}
	}
	res, err := stores[1].JobList(t.Context(), store.ListParams{States: []job.State{job.StateSucceeded}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != total {
		t.Fatalf("%d jobs succeeded, want %d", res.Total, total)
	}
	if events := journalEntries(t, stores[1]); events != 3*total {
		t.Fatalf("%d events, want %d (queued, claimed, succeeded per job)", events, 3*total)
	}
}
