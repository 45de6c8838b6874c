package engine

import (
	"context"

	"jobd/store"
)

// maxHeartbeatBatch caps the leases renewed by one JobHeartbeat call.
const maxHeartbeatBatch = 1000

// heartbeats renews the leases of every running job each
// HeartbeatInterval until stop is closed.
func (e *Engine) heartbeats(ctx context.Context, stop <-chan struct{}) {
	h := health{log: e.log, what: "lease heartbeat"}
	t := e.clock.NewTimer(e.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C():
		}
		xs := e.runningJobs()
		for len(xs) > 0 {
			n := min(len(xs), maxHeartbeatBatch)
			e.heartbeat(ctx, xs[:n], &h)
			xs = xs[n:]
		}
		t.Reset(e.cfg.HeartbeatInterval)
	}
}

// heartbeat renews xs' leases in one call and tells each handler whose
// lease is gone, or whose job someone wants cancelled, to stop.
func (e *Engine) heartbeat(ctx context.Context, xs []*execution, h *health) {
	leases := make([]store.Lease, len(xs))
	for i, x := range xs {
		leases[i] = x.lease
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	res, err := e.store.JobHeartbeat(cctx, e.cfg.Node, leases)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			h.fail(err)
		}
		return
	}
	h.ok()
	for i, r := range res {
		if i >= len(xs) {
			break
		}
		switch {
		case !r.Held:
			xs[i].leaseLost("heartbeat")
		case r.CancelRequested:
			xs[i].cancel(ErrCancelRequested)
		}
	}
}
