package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// testListFeedExact runs FeedExactlyOnce on a store with the real clock:
// only there do PostgreSQL's timestamps come from the transactions that
// write them, which its feed relies on.
func testListFeedExact(t *testing.T, e *env) {
	FeedExactlyOnce(t, e.open(t, clock.Real))
}

// The size of FeedExactlyOnce's run: each writer claims jobs one at a
// time, reports progress a few times and finishes them, while the reader
// pages the feed a few rows at a time.
const (
	feedWriters  = 4
	feedJobs     = 24
	feedProgress = 3
	feedPage     = 3
)

// version is one (id, updated_at) state of a job: what the feed delivers.
type version struct {
	id uuid.UUID
	at int64 // updated_at, unix µs
}

// FeedExactlyOnce checks that the "updated since" feed delivers every
// change exactly once to a reader that pages it while writers commit:
// writer goroutines claim, report progress on and finish jobs in s, while
// the reader pages the feed with small pages, each after the previous
// page's last job, until the writers have stopped and one more pass finds
// nothing new. Every job's final version (its last updated_at, with its
// final contents) must have been delivered, and no version twice. s must be empty; a driver may run this with a clock of
// its choosing (the suite uses the real one).
func FeedExactlyOnce(t *testing.T, s store.Store) {
	t.Helper()
	const queue = "feed"
	params := make([]job.InsertParams, feedJobs)
	for i := range params {
		params[i] = job.InsertParams{Queue: queue, Kind: "k"}
	}
	if _, err := s.JobInsertMany(t.Context(), params); err != nil {
		t.Fatalf("JobInsertMany: %v", err)
	}

	done := make(chan struct{})
	wrote := make(chan struct{}, 1) // a write committed since the reader last looked
	var wg sync.WaitGroup
	for w := range feedWriters {
		wg.Go(func() { feedWriter(t, s, queue, fmt.Sprint("writer-", w), wrote) })
	}
	go func() { wg.Wait(); close(done) }()
	defer wg.Wait() // no writer may outlive the test, even a failed one

	seen := make(map[version]int)
	delivered := make(map[version]*job.Job) // as first delivered
	since := time.Unix(0, 0).UTC()
	p := store.ListParams{UpdatedSince: &since, Limit: feedPage}
	// pass reads pages from the cursor until one comes back short, and
	// returns how many jobs it read.
	pass := func() int {
		n := 0
		for {
			res, err := s.JobList(t.Context(), p)
			if err != nil {
				t.Fatalf("JobList: %v", err)
			}
			for _, j := range res.Jobs {
				v := version{j.ID, j.UpdatedAt.UnixMicro()}
				if seen[v]++; seen[v] == 1 {
					delivered[v] = j
				}
			}
			n += len(res.Jobs)
			if len(res.Jobs) > 0 {
				last := res.Jobs[len(res.Jobs)-1]
				p.After = &store.Cursor{ID: last.ID, UpdatedAt: last.UpdatedAt}
			}
			if len(res.Jobs) < feedPage {
				return n
			}
		}
	}
	for {
		var stopped bool
		select {
		case <-done:
			stopped = true
		default:
		}
		if n := pass(); stopped && n == 0 {
			break
		}
		if !stopped {
			select { // rather than spin on the cores the writers need
			case <-wrote:
			case <-done:
			}
		}
	}
	if t.Failed() {
		return
	}

	res, err := s.JobList(t.Context(), store.ListParams{Queue: queue, Limit: feedJobs})
	if err != nil {
		t.Fatalf("JobList: %v", err)
	}
	if len(res.Jobs) != feedJobs {
		t.Fatalf("%d jobs, want %d", len(res.Jobs), feedJobs)
	}
	for _, j := range res.Jobs {
		if j.State != job.StateSucceeded {
			t.Fatalf("job %s is %s after the writers stopped, want succeeded", j.ID, j.State)
		}
		// A change that did not move updated_at would show here as a
		// version delivered with other contents.
		d := delivered[version{j.ID, j.UpdatedAt.UnixMicro()}]
		switch {
		case d == nil:
			t.Errorf("the feed never delivered job %s as last updated at %v", j.ID, j.UpdatedAt)
		case d.State != j.State || d.Progress.Done != j.Progress.Done:
			t.Errorf("the feed delivered job %s at %v as %s with progress %d, but it is %s with progress %d",
				j.ID, j.UpdatedAt, d.State, d.Progress.Done, j.State, j.Progress.Done)
		}
	}
	for v, n := range seen {
		if n > 1 {
			t.Errorf("the feed delivered job %s updated at %v %d times", v.id, time.UnixMicro(v.at).UTC(), n)
		}
	}
}

// feedWriter claims jobs of queue one at a time until none is left,
// reporting progress on each and finishing it. It signals wrote after
// each write.
func feedWriter(t *testing.T, s store.Store, queue, owner string, wrote chan<- struct{}) {
	ctx := t.Context()
	signal := func() {
		select {
		case wrote <- struct{}{}:
		default:
		}
	}
	for {
		jobs, err := s.JobClaim(ctx, store.ClaimParams{Queue: queue, Max: 1, Owner: owner})
		if err != nil {
			t.Errorf("JobClaim: %v", err)
			return
		}
		if len(jobs) == 0 {
			return
		}
		signal()
		c := jobs[0]
		for i := range feedProgress {
			if _, err := s.JobSetProgress(ctx, leaseOf(c), job.Progress{Done: int64(i + 1), Total: feedProgress}); err != nil {
				t.Errorf("JobSetProgress: %v", err)
				return
			}
			signal()
		}
		res, err := s.JobFinish(ctx, []store.Outcome{outcomeSucceeded(c, `{}`)})
		if err != nil || res[0].Lost {
			t.Errorf("JobFinish: %+v, %v", res, err)
			return
		}
		signal()
	}
}
