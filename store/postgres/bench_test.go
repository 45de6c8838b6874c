package postgres

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// BenchmarkClaimFinish works a backlog of b.N no-op jobs (inserted before
// the clock starts) with concurrent workers that each claim a batch and
// finish it as succeeded, until the queue is empty, journal included. It
// reports jobs/s. For the headline figure, run a 200k backlog against a
// server with default durability (fsync and synchronous_commit on):
//
//	JOBD_TEST_DATABASE_URL=postgres://... go test -run '^$' \
//	    -bench ClaimFinish -benchtime 200000x ./store/postgres
//
// Without JOBD_TEST_DATABASE_URL it runs on the throwaway test cluster,
// which has fsync off: those figures are not comparable.
func BenchmarkClaimFinish(b *testing.B) {
	for _, batch := range []int{100, 1000} {
		for _, workers := range []int{2, 4} {
			b.Run(fmt.Sprintf("batch=%d/workers=%d", batch, workers), func(b *testing.B) {
				benchClaimFinish(b, benchShape{batch: batch, workers: workers})
			})
		}
	}
}

// BenchmarkClaimFinishMixed is BenchmarkClaimFinish with one job in ten
// failing (retryable, due in an hour): every batch is a mixed one, which
// locks the rows it finishes, decides in Go and applies, one round trip
// more than a batch of successes.
func BenchmarkClaimFinishMixed(b *testing.B) {
	for _, batch := range []int{100, 1000} {
		b.Run(fmt.Sprintf("batch=%d/workers=4", batch), func(b *testing.B) {
			benchClaimFinish(b, benchShape{batch: batch, workers: 4, failEvery: 10})
		})
	}
}

// BenchmarkClaimFinishCallbacks is BenchmarkClaimFinish with a callback
// URL on every job: each success also records its callback in the
// webhook outbox, in the finish's statement. (Nothing dispatches it here.)
func BenchmarkClaimFinishCallbacks(b *testing.B) {
	for _, batch := range []int{100, 1000} {
		b.Run(fmt.Sprintf("batch=%d/workers=4", batch), func(b *testing.B) {
			benchClaimFinish(b, benchShape{batch: batch, workers: 4, callbackURL: "https://caller.example/jobs/done"})
		})
	}
}

// BenchmarkClaimFinishLimited is BenchmarkClaimFinish on a limited
// queue: a partition_limit of 2 over 1 000 partitions (the jobs' keys in
// turn), so that every claim takes the queue's lock and counts what runs.
func BenchmarkClaimFinishLimited(b *testing.B) {
	for _, batch := range []int{100, 1000} {
		b.Run(fmt.Sprintf("batch=%d/workers=4", batch), func(b *testing.B) {
			benchClaimFinish(b, benchShape{batch: batch, workers: 4,
				limits: flow.Limits{PartitionLimit: 2}, partitions: 1000})
		})
	}
}

// benchShape is what benchClaimFinish works: batch jobs a claim, workers
// claiming at once; with failEvery > 0, one outcome in failEvery is a
// retryable failure; every job has callbackURL ("" for none); the queue
// has limits, and its jobs partitions partition keys in turn (0: none).
type benchShape struct {
	batch, workers, failEvery int
	callbackURL               string
	limits                    flow.Limits
	partitions                int
}

// benchClaimFinish works the backlog.
func benchClaimFinish(b *testing.B, shape benchShape) {
	ctx := context.Background()
	batch, workers, failEvery := shape.batch, shape.workers, shape.failEvery
	s := openStore(b, migratedDatabase(b), clock.Real)
	if shape.limits.Limited() {
		if err := s.QueueSetLimits(ctx, "bench", shape.limits); err != nil {
			b.Fatal(err)
		}
	}
	params := make([]job.InsertParams, 0, 1000)
	for left := b.N; left > 0; left -= len(params) {
		params = params[:0]
		for i := range min(left, cap(params)) {
			p := job.InsertParams{Queue: "bench", Kind: "noop", CallbackURL: shape.callbackURL}
			if shape.partitions > 0 {
				p.PartitionKey = fmt.Sprint("p", i%shape.partitions)
			}
			params = append(params, p)
		}
		if _, err := s.JobInsertMany(ctx, params); err != nil {
			b.Fatal(err)
		}
	}
	walBefore := walLSN(b, s)
	var done atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	b.ResetTimer()
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprint("bench-", w)
			outcomes := make([]store.Outcome, 0, batch)
			for {
				jobs, err := s.JobClaim(ctx, store.ClaimParams{Queue: "bench", Max: batch, Owner: owner})
				if err != nil {
					errs <- err
					return
				}
				if len(jobs) == 0 {
					return
				}
				outcomes = outcomes[:0]
				for i, j := range jobs {
					o := store.Outcome{Lease: store.Lease{ID: j.ID, Token: j.LeaseToken}, Outcome: job.Outcome{Status: store.OutcomeSucceeded}}
					if failEvery > 0 && i%failEvery == 0 {
						o.Status, o.Error, o.Retryable, o.RetryDelay = store.OutcomeFailed, "bench", true, time.Hour
					}
					outcomes = append(outcomes, o)
				}
				res, err := s.JobFinish(ctx, outcomes)
				if err != nil {
					errs <- err
					return
				}
				for _, r := range res {
					if r.Lost {
						errs <- fmt.Errorf("lease lost in a benchmark with no rescuer")
						return
					}
				}
				done.Add(int64(len(res)))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	if n := done.Load(); n != int64(b.N) {
		b.Fatalf("finished %d jobs, want %d", n, b.N)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
	var wal float64
	if err := s.pool.QueryRow(ctx, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)", walBefore).Scan(&wal); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(wal/float64(b.N), "WAL-B/job")
}

// walLSN returns the server's current write-ahead log position.
func walLSN(b *testing.B, s *Store) string {
	var lsn string
	if err := s.pool.QueryRow(context.Background(), "SELECT pg_current_wal_lsn()::text").Scan(&lsn); err != nil {
		b.Fatal(err)
	}
	return lsn
}

// BenchmarkInsertMany inserts b.N no-op jobs in batches of 1000, one
// JobInsertMany (one transaction) per batch, and reports jobs/s.
func BenchmarkInsertMany(b *testing.B) {
	ctx := context.Background()
	s := openStore(b, migratedDatabase(b), clock.Real)
	params := make([]job.InsertParams, 0, 1000)
	b.ResetTimer()
	start := time.Now()
	for left := b.N; left > 0; left -= len(params) {
		params = params[:0]
		for range min(left, cap(params)) {
			params = append(params, job.InsertParams{Queue: "bench", Kind: "noop"})
		}
		if _, err := s.JobInsertMany(ctx, params); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
}

// BenchmarkInsertConcurrent inserts one job per JobInsertMany from 32
// goroutines at once (many library callers, each enqueueing in a
// transaction of its own) and reports jobs/s: how well concurrent
// inserting transactions commit together.
func BenchmarkInsertConcurrent(b *testing.B) {
	s := openStore(b, migratedDatabase(b), clock.Real)
	b.SetParallelism(16)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		p := []job.InsertParams{{Queue: "bench", Kind: "noop"}}
		for pb.Next() {
			if _, err := s.JobInsertMany(context.Background(), p); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
}
