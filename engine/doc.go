// Package engine runs the jobs of a store.Store in this process: a worker
// pool per queue that claims jobs in batches, typed handlers by kind, one
// goroutine renewing every running lease, throttled progress writes,
// cooperative cancel, hard time limits (a handler's context ends at its
// attempt's deadline, and a handler that ignores it stops counting
// against its pool after AbandonGrace), retries with a per-queue backoff,
// batched outcome writes, and the node's maintenance (package
// maintenance): the rescue of expired leases and the end of attempts
// past their deadline on every node, the retention on the elected
// leader, and the duties other packages add (AddDuty: the schedule
// ticker, the worker sweep…).
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
