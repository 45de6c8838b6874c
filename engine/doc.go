// Package engine runs the jobs of a store.Store in this process: a worker
// pool per queue that claims jobs in batches, typed handlers by kind, one
// goroutine renewing every running lease, throttled progress writes,
// cooperative cancel, retries with a per-queue backoff, batched outcome
// writes, and the node's maintenance (package maintenance): the rescue of
// expired leases on every node, the retention on the elected leader, and
// the duties other packages add (AddDuty).
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
