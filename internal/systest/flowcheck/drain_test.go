package flowcheck_test

import (
	"context"
	"testing"
	"time"

	"github.com/jobd/jobd/flow"
)

// BenchmarkGlobalLimitDrain drains 2 000 jobs per iteration of 2 ms each
// from a queue with a global_limit of 5, over the pools of three nodes
// (no remote worker), and reports jobs/s: how soon a slot that one node's
// job frees is taken, by that node or another. At 2 ms a job, five slots
// allow about 2 500 jobs/s. Run it with -benchtime 1x.
func BenchmarkGlobalLimitDrain(b *testing.B) {
	benchGlobalLimitDrain(b, 8, 0)
}

// BenchmarkGlobalLimitDrainRemote is BenchmarkGlobalLimitDrain by two
// remote workers (4 slots each) long-polling one node of three, which
// have no pool: no local slot's end wakes their claims.
func BenchmarkGlobalLimitDrainRemote(b *testing.B) {
	benchGlobalLimitDrain(b, 0, 2)
}

// benchGlobalLimitDrain drains the queue with pools of concurrency on
// each of three nodes and remotes remote workers.
func benchGlobalLimitDrain(b *testing.B, concurrency, remotes int) {
	const queue, perIteration, limit = "drained", 2000, 5
	m := newMonitor(b.N * perIteration)
	c := startNodes(b, queue, m, concurrency, remotes)
	c.setLimits(b, queue, flow.Limits{GlobalLimit: limit})
	// Queued while paused, so that the timer starts with every job queued.
	if err := c.st[1].QueueSetPaused(context.Background(), queue, true); err != nil {
		b.Fatal(err)
	}
	ws := make([]work, b.N*perIteration)
	for i := range ws {
		ws[i] = work{Partition: "p", HoldMS: 2}
	}
	c.insert(b, queue, ws)
	b.ResetTimer()
	if err := c.st[1].QueueSetPaused(context.Background(), queue, false); err != nil {
		b.Fatal(err)
	}
	m.wait(b, 10*time.Minute)
	b.StopTimer()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.maxRunning > limit {
		b.Fatalf("handlers saw %d running at once (limit %d)", m.maxRunning, limit)
	}
	b.ReportMetric(float64(len(ws))/b.Elapsed().Seconds(), "jobs/s")
	b.ReportMetric(float64(m.maxRunning), "max-running")
}
