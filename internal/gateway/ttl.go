package gateway

import (
	"context"
	"fmt"
	"time"

	"github.com/jobd/jobd/engine"
)

// DutyResultTTL names the removal of expired results among the
// maintenance duties.
const DutyResultTTL = "gateway result ttl"

// sweepCallTimeout bounds each store call of the sweep.
const sweepCallTimeout = 30 * time.Second

// ttlDuty is the leader duty that removes, every SweepInterval, the
// results older than ResultTTL; New adds it to the engine's maintenance.
func (g *Gateway) ttlDuty() engine.Duty {
	return engine.Duty{Name: DutyResultTTL, Interval: g.cfg.SweepInterval, Leader: true, Pass: g.removeExpired}
}

// removeExpired removes the results older than ResultTTL, in batches.
func (g *Gateway) removeExpired(ctx context.Context) error {
	cutoff := g.clock.Now().Add(-g.cfg.ResultTTL)
	total := 0
	defer func() {
		if total > 0 {
			g.log.Info("gateway: removed expired results", "results", total, "ttl", g.cfg.ResultTTL)
		}
	}()
	for {
		cctx, cancel := context.WithTimeout(ctx, sweepCallTimeout)
		n, err := g.store.JobPruneQueue(cctx, Queue, cutoff, deleteBatch)
		cancel()
		total += n
		if err != nil {
			return fmt.Errorf("remove expired results: %w", err)
		}
		if n < deleteBatch {
			return nil
		}
	}
}
