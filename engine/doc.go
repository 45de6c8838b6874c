// Package engine runs the jobs of a store.Store in this process: a worker
// pool per queue that claims jobs in batches, typed handlers by kind, one
// goroutine renewing every running lease, throttled progress writes,
// cooperative cancel, retries with a per-queue backoff, batched outcome
// writes, and the periodic duties (reaper, retention) on one node at a
// time through a leader lease.
//
// A typical embedding:
//
//	e, err := engine.New(engine.Config{
//		Store:  st,
//		Queues: []engine.QueueConfig{{Queue: "default", Concurrency: 4}},
//	})
//	engine.Register(e, "resize", func(ctx context.Context, j *engine.Job[ResizeArgs]) (ResizeResult, error) {
//		...
//	})
//	err = e.Run(ctx) // until ctx ends, then a graceful shutdown
package engine
