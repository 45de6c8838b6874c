package gateway

import (
	"context"
	"fmt"

	"github.com/jobd/jobd/flow"
)

// ThrottleByUpstream makes the throttle of one upstream (a 429 or 503
// with Retry-After) hold back that upstream's requests only, not every
// upstream's: the gateway's jobs carry their upstream's name as their
// partition_key, and this sets the throttle_by of Queue to
// flow.ByPartitionKey. It keeps every limit an operator set on Queue,
// even one set at the same instant from another node, and a throttle_by
// already set: the store writes it in one conditional write
// (store.QueueStore.QueueSetThrottleByIfUnset). A server calls it once at
// start, on every node (concurrent calls agree); without it a throttle
// stops every upstream's requests for its delay.
func (g *Gateway) ThrottleByUpstream(ctx context.Context) error {
	set, err := g.store.QueueSetThrottleByIfUnset(ctx, Queue, flow.ByPartitionKey)
	if err != nil {
		return fmt.Errorf("gateway: set the %s queue's throttle_by: %w", Queue, err)
	}
	if set {
		g.log.Info("gateway: a throttle now holds back one upstream's requests (the gateway queue's throttle_by is partition_key)",
			"queue", Queue, "throttle_by", flow.ByPartitionKey)
	}
	return nil
}
