package sqlite

import (
	"testing"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestPurgeInBatches purges with batches of 2: the batches add up, the
// running job stays, and so does the other queue.
func TestPurgeInBatches(t *testing.T) {
	s := openTemp(t, nil)
	ctx := t.Context()
	params := make([]job.InsertParams, 6)
	for i := range params {
		params[i] = job.InsertParams{Queue: "q", Kind: "k"}
	}
	params = append(params, job.InsertParams{Queue: "other", Kind: "k"})
	if _, err := s.JobInsertMany(ctx, params); err != nil {
		t.Fatal(err)
	}
	running, err := s.JobClaim(ctx, store.ClaimParams{Queue: "q", Max: 1, Owner: "w"})
	if err != nil || len(running) != 1 {
		t.Fatalf("JobClaim: %d jobs, %v", len(running), err)
	}
	if n, err := s.purge(ctx, "q", 2); err != nil || n != 5 {
		t.Fatalf("purge by 2: %d, %v; want 5", n, err)
	}
	res, err := s.JobList(ctx, store.ListParams{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Jobs) != 2 {
		t.Fatalf("%d jobs left, want the running one and the other queue's", len(res.Jobs))
	}
	if events := journalEntries(t, s); events != 3 { // queued + claimed of the running job, queued of the other
		t.Fatalf("%d events left, want 3", events)
	}
}
