package gateway

import (
	"context"
	"time"
)

// sweepLeader is the leader lease under which one node at a time removes
// expired results.
const sweepLeader = "gateway-results"

// Run removes, every SweepInterval, the results older than ResultTTL,
// until ctx ends; one node at a time does it, under a leader lease. It
// returns nil when ctx ends: store errors are logged and retried on the
// next tick.
func (g *Gateway) Run(ctx context.Context) error {
	t := g.clock.NewTimer(0)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
		n, err := g.sweep(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && !failing:
			failing = true
			g.log.Error("gateway: removing expired results failing; retrying", "err", err)
		case err == nil && failing:
			failing = false
			g.log.Info("gateway: removing expired results recovered")
		}
		if n > 0 {
			g.log.Info("gateway: removed expired results", "results", n, "ttl", g.cfg.ResultTTL)
		}
		t.Reset(g.cfg.SweepInterval)
	}
}

// sweep removes the results older than ResultTTL when this node leads.
func (g *Gateway) sweep(ctx context.Context) (int, error) {
	cctx, cancel := context.WithTimeout(ctx, sweepCallTimeout)
	leads, err := g.store.LeaderAttempt(cctx, sweepLeader, g.node, 3*g.cfg.SweepInterval)
	cancel()
	if err != nil || !leads {
		return 0, err
	}
	cutoff := g.clock.Now().Add(-g.cfg.ResultTTL)
	total := 0
	for {
		cctx, cancel := context.WithTimeout(ctx, sweepCallTimeout)
		n, err := g.store.JobPruneQueue(cctx, Queue, cutoff, deleteBatch)
		cancel()
		total += n
		if err != nil || n < deleteBatch {
			return total, err
		}
	}
}

// sweepCallTimeout bounds each store call of the sweep.
const sweepCallTimeout = 30 * time.Second
