package engine

import (
	"context"
	"time"

	"github.com/jobd/jobd/store"
)

// maxHeartbeatBatch caps the leases renewed by one JobHeartbeat call.
const maxHeartbeatBatch = 1000

// minRenewEvery keeps a job with a tiny lease from turning the heartbeat
// into a busy loop.
const minRenewEvery = 100 * time.Millisecond

// renewEvery is how often x's lease is renewed: every HeartbeatInterval,
// or a third of the job's own lease when that is shorter, so that two
// renewals can fail before the lease runs out.
func (e *Engine) renewEvery(x *execution) time.Duration {
	d := e.cfg.HeartbeatInterval
	if ttl := x.job.LeaseTTL; ttl > 0 && ttl/3 < d {
		d = max(ttl/3, minRenewEvery)
	}
	return d
}

// heartbeats renews the leases of the running jobs, each on its own
// schedule (see renewEvery), in batched calls, until stop is closed. A
// job whose renewal falls due within half its period of the earliest is
// renewed in the same call.
func (e *Engine) heartbeats(ctx context.Context, stop <-chan struct{}) {
	h := health{log: e.log, what: "lease heartbeat", point: &e.points.health}
	t := e.clock.NewTimer(e.nextRenewal())
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-e.renewKick:
			t.Stop()
			t.Reset(e.nextRenewal())
			continue
		case <-t.C():
		}
		now := e.clock.Now()
		var due []*execution
		for _, x := range e.runningJobs() {
			if d := x.job.Deadline; d != nil && !d.After(now) {
				// Over: no lease to renew (the reaper ends the attempt);
				// its next turn is put off, so the loop does not spin.
				x.renewAt.Store(now.Add(e.renewEvery(x)))
				continue
			}
			if every := e.renewEvery(x); !x.renewAt.Load().After(now.Add(every / 2)) {
				x.renewAt.Store(now.Add(every))
				due = append(due, x)
			}
		}
		for len(due) > 0 {
			n := min(len(due), maxHeartbeatBatch)
			e.heartbeat(ctx, due[:n], &h)
			due = due[n:]
		}
		t.Reset(e.nextRenewal())
	}
}

// nextRenewal is how long until the earliest renewal falls due, or
// HeartbeatInterval when nothing runs.
func (e *Engine) nextRenewal() time.Duration {
	next := e.cfg.HeartbeatInterval
	now := e.clock.Now()
	for _, x := range e.runningJobs() {
		next = min(next, x.renewAt.Load().Sub(now))
	}
	return max(next, 0)
}

// scheduleRenewal sets x's first renewal and, when it falls due before the
// heartbeat loop would next wake, tells the loop to look again.
func (e *Engine) scheduleRenewal(x *execution) {
	every := e.renewEvery(x)
	x.renewAt.Store(e.clock.Now().Add(every))
	if every < e.cfg.HeartbeatInterval {
		select {
		case e.renewKick <- struct{}{}:
		default:
		}
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
	e.cfg.Observer.HeartbeatBatch(len(leases))
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
