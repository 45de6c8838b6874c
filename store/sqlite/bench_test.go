package sqlite

import (
	"fmt"
	"testing"

	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// BenchmarkClaimFinish works a backlog of b.N no-op jobs (events on, WAL,
// synchronous=FULL): claim a batch of 100, finish it succeeded, repeat.
// It reports jobs/s; the backlog's insert is not timed.
func BenchmarkClaimFinish(b *testing.B) {
	benchClaimFinish(b, flow.Limits{}, 0)
}

// BenchmarkClaimFinishLimited is BenchmarkClaimFinish on a limited queue:
// a partition_limit of 2 over 1 000 partitions (the jobs' keys in turn),
// so that every claim counts what runs.
func BenchmarkClaimFinishLimited(b *testing.B) {
	benchClaimFinish(b, flow.Limits{PartitionLimit: 2}, 1000)
}

// benchClaimFinish works the backlog of a queue with limits, its jobs in
// partitions partition keys in turn (0: none).
func benchClaimFinish(b *testing.B, limits flow.Limits, partitions int) {
	const batch = 100
	s := openTemp(b, nil)
	ctx := b.Context()
	if limits.Limited() {
		if err := s.QueueSetLimits(ctx, job.DefaultQueue, limits); err != nil {
			b.Fatal(err)
		}
	}
	params := make([]job.InsertParams, 0, 1000)
	for left := b.N; left > 0; left -= len(params) {
		params = params[:0]
		for i := range min(left, cap(params)) {
			p := job.InsertParams{Kind: "noop"}
			if partitions > 0 {
				p.PartitionKey = fmt.Sprint("p", i%partitions)
			}
			params = append(params, p)
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
			outcomes = append(outcomes, store.Outcome{Lease: store.Lease{ID: j.ID, Token: j.LeaseToken}, Outcome: job.Outcome{Status: store.OutcomeSucceeded}})
		}
		if _, err := s.JobFinish(ctx, outcomes); err != nil {
			b.Fatal(err)
		}
		done += len(jobs)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkClaimPausedQueue claims from a paused queue that holds 100 000
// queued jobs: the claim must refuse the queue once, not job by job.
func BenchmarkClaimPausedQueue(b *testing.B) {
	const backlog = 100_000
	s := openTemp(b, nil)
	ctx := b.Context()
	if err := s.QueueSetPaused(ctx, job.DefaultQueue, true); err != nil {
		b.Fatal(err)
	}
	params := make([]job.InsertParams, 1000)
	for i := range params {
		params[i] = job.InsertParams{Kind: "noop"}
	}
	for range backlog / len(params) {
		if _, err := s.JobInsertMany(ctx, params); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		jobs, err := s.JobClaim(ctx, store.ClaimParams{Queue: job.DefaultQueue, Max: 100, Owner: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		if len(jobs) != 0 {
			b.Fatalf("claimed %d jobs of a paused queue", len(jobs))
		}
	}
}
