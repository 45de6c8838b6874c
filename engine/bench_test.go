package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// BenchmarkEngineNoop measures an engine working a backlog of b.N noop
// jobs inserted beforehand, in jobs per second (claimed, run and written
// succeeded).
func BenchmarkEngineNoop(b *testing.B) {
	for _, driver := range drivers {
		b.Run(driver, func(b *testing.B) {
			s := &finishCounter{Store: openStore(b, driver), target: int64(b.N), done: make(chan struct{})}
			const chunk = 1000
			for i := 0; i < b.N; i += chunk {
				params := make([]job.InsertParams, min(chunk, b.N-i))
				for k := range params {
					params[k] = job.InsertParams{Kind: "noop"}
				}
				if _, err := s.JobInsertMany(context.Background(), params); err != nil {
					b.Fatalf("insert: %v", err)
				}
			}
			e := newEngine(b, s, newLogs(b), engine.Config{
				Queues: []engine.QueueConfig{{Queue: job.DefaultQueue, Concurrency: 100}},
			})
			b.ResetTimer()
			began := time.Now()
			r := start(b, e)
			<-s.done
			elapsed := time.Since(began)
			b.StopTimer()
			if err := r.stop(b); err != nil {
				b.Errorf("Run: %v", err)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
		})
	}
}

// finishCounter is the real store, counting the jobs its JobFinish
// moved to succeeded, so the benchmark learns the backlog is done without
// querying the database.
type finishCounter struct {
	store.Store
	n      atomic.Int64
	target int64
	done   chan struct{}
}

func (c *finishCounter) JobFinish(ctx context.Context, outcomes []store.Outcome) ([]store.FinishResult, error) {
	res, err := c.Store.JobFinish(ctx, outcomes)
	var n int64
	for _, r := range res {
		if r.State == job.StateSucceeded && !r.Lost {
			n++
		}
	}
	if total := c.n.Add(n); n > 0 && total >= c.target && total-n < c.target {
		close(c.done)
	}
	return res, err
}
