package storetest

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// testRescueConcurrent: several rescuers (every node rescues) run at once,
// while the holders of half the expired jobs renew their leases. Every
// job is rescued at most once, none that a renewal reported held is
// rescued, and none that expired is left behind.
func testRescueConcurrent(t *testing.T, e *env) {
	const jobs, rescuers, batch = 60, 4, 7
	params := make([]job.InsertParams, jobs)
	for i := range params {
		params[i] = job.InsertParams{Kind: "k", LeaseTTL: time.Minute}
	}
	e.insertMany(t, params...)
	claimed := e.claim(t, job.DefaultQueue, jobs)
	if len(claimed) != jobs {
		t.Fatalf("claimed %d, want %d", len(claimed), jobs)
	}
	e.clk.Advance(time.Minute + time.Second)

	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		errs    []error
		rescued int
		held    = make([]bool, jobs)
	)
	for range rescuers {
		wg.Go(func() {
			for {
				n, err := e.s.JobRescue(t.Context(), batch)
				mu.Lock()
				rescued += n
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
				if err != nil || n == 0 {
					return
				}
			}
		})
	}
	for i := 0; i < jobs; i += 2 {
		wg.Go(func() {
			res, err := e.s.JobHeartbeat(t.Context(), owner, []store.Lease{leaseOf(claimed[i])})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			held[i] = res[0].Held
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("concurrent rescues and heartbeats: %v", errs)
	}

	renewed := 0
	for i, c := range claimed {
		j := e.get(t, c.ID)
		kinds := kindsOf(e.events(t, c.ID))
		if held[i] {
			renewed++
			if j.State != job.StateRunning || j.LeaseToken != c.LeaseToken {
				t.Errorf("job %s, renewed: %s with token %s, want running with %s", c.ID, j.State, j.LeaseToken, c.LeaseToken)
			}
			if want := []job.EventKind{job.EventQueued, job.EventClaimed}; !slices.Equal(kinds, want) {
				t.Errorf("journal of renewed job %s = %v, want %v", c.ID, kinds, want)
			}
			continue
		}
		if j.State != job.StateQueued {
			t.Errorf("job %s, expired and not renewed: %s, want queued", c.ID, j.State)
		}
		if want := []job.EventKind{job.EventQueued, job.EventClaimed, job.EventRescued}; !slices.Equal(kinds, want) {
			t.Errorf("journal of rescued job %s = %v, want %v", c.ID, kinds, want)
		}
	}
	if rescued != jobs-renewed {
		t.Errorf("the rescuers reported %d jobs, want %d (%d of %d renewed)", rescued, jobs-renewed, renewed, jobs)
	}
	if n := e.rescue(t, jobs); n != 0 {
		t.Errorf("a last rescue took %d jobs the concurrent ones left", n)
	}
}

func kindsOf(evs []job.Event) []job.EventKind {
	kinds := make([]job.EventKind, len(evs))
	for i, ev := range evs {
		kinds[i] = ev.Kind
	}
	return kinds
}
