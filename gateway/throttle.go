package gateway

import (
	"context"
	"fmt"

	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/store"
)

// ThrottleByUpstream makes the throttle of one upstream (a 429 or 503
// with Retry-After) hold back that upstream's requests only, not every
// upstream's: the gateway's jobs carry their upstream's name as their
// partition_key, and this sets the throttle_by of Queue to
// flow.ByPartitionKey. It keeps every limit an operator set on Queue,
// and a throttle_by already set; it changes nothing when the queue
// throttles by partition already. A server calls it once at start, on
// every node (concurrent calls agree); without it a throttle stops every
// upstream's requests for its delay.
func (g *Gateway) ThrottleByUpstream(ctx context.Context) error {
	var before, after flow.Limits
	changed := false
	err := g.store.InTx(ctx, func(ctx context.Context, ex store.Executor) error {
		all, err := ex.QueueSettings(ctx)
		if err != nil {
			return err
		}
		changed = false
		for _, q := range all {
			if q.Name == Queue {
				before = q.Limits
			}
		}
		if before.ThrottleBy != "" {
			return nil
		}
		after = before
		after.ThrottleBy = flow.ByPartitionKey
		changed = true
		return ex.QueueSetLimits(ctx, Queue, after)
	})
	if err != nil {
		return fmt.Errorf("gateway: set the %s queue's throttle_by: %w", Queue, err)
	}
	if changed {
		g.log.Info("gateway: a throttle now holds back one upstream's requests (the gateway queue's throttle_by is partition_key)",
			"queue", Queue, "was", before.String(), "now", after.String())
	}
	return nil
}
