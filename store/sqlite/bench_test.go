package sqlite

import (
	"testing"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// BenchmarkClaimFinish works a backlog of b.N no-op jobs (events on, WAL,
// synchronous=FULL): claim a batch of 100, finish it succeeded, repeat.
// It reports jobs/s; the backlog's insert is not timed.
func BenchmarkClaimFinish(b *testing.B) {
	const batch = 100
	s := openTemp(b, nil)
	ctx := b.Context()
	params := make([]job.InsertParams, 0, 1000)
	for left := b.N; left > 0; left -= len(params) {
		params = params[:0]
		for range min(left, cap(params)) {
			params = append(params, job.InsertParams{Kind: "noop"})
		}
		if _, err := s.JobInsertMany(ctx, params); err != nil {
			b.Fatal(err)
		}
	}

	b.ResetTimer()
	outcomes := make([]store.Outcome, 0, batch)
	for done := 0; done < b.N; {
		jobs, err := s.JobClaim(ctx, store.ClaimParams{Queue: job.DefaultQueue, Max: batch, Owner: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		if len(jobs) == 0 {
			b.Fatalf("backlog empty after %d of %d jobs", done, b.N)
		}
		outcomes = outcomes[:0]
		for _, j := range jobs {
			outcomes = append(outcomes, store.Outcome{Lease: store.Lease{ID: j.ID, Token: j.LeaseToken}, Status: store.OutcomeSucceeded})
		}
		if _, err := s.JobFinish(ctx, outcomes); err != nil {
			b.Fatal(err)
		}
		done += len(jobs)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}
