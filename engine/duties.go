package engine

import (
	"context"
	"time"
)

const (
	// leaderName is the leader lease under which one node at a time runs
	// the duties.
	leaderName = "maintenance"
	// pruneInterval is the gap between two retention passes.
	pruneInterval = time.Minute
	// dutyBatch is the rows one rescue or prune call handles; a pass
	// repeats it until fewer come back.
	dutyBatch = 1000
)

// duties runs the reaper every ReaperInterval and the retention every
// minute while this node holds the maintenance leadership, trying for it
// (or renewing it) on each tick, until ctx ends.
func (e *Engine) duties(ctx context.Context) {
	h := health{log: e.log, what: "maintenance"}
	t := e.clock.NewTimer(0)
	defer t.Stop()
	defer e.leading.Store(false) // Run resigns once every loop has stopped
	var (
		leading   bool
		lastPrune time.Time
	)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		ok, err := e.store.LeaderAttempt(cctx, leaderName, e.cfg.Node, 3*e.cfg.ReaperInterval)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			// Unsure whether we still lead: do nothing this tick; the
			// term expires by itself if we cannot renew it.
			e.leading.Store(false)
			h.fail(err)
			t.Reset(e.cfg.ReaperInterval)
			continue
		}
		e.leading.Store(ok)
		if ok != leading {
			leading = ok
			if ok {
				e.led.Store(true)
				e.log.Info("engine: this node leads maintenance (reaper, retention)", "node", e.cfg.Node)
			} else {
				e.log.Info("engine: this node no longer leads maintenance", "node", e.cfg.Node)
			}
		}
		if leading {
			err = e.rescue(ctx)
			if err == nil {
				err = e.markOffline(ctx)
			}
			if err == nil && (lastPrune.IsZero() || e.clock.Now().Sub(lastPrune) >= pruneInterval) {
				if err = e.prune(ctx); err == nil {
					lastPrune = e.clock.Now()
				}
			}
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			h.fail(err)
		} else {
			h.ok()
		}
		t.Reset(e.cfg.ReaperInterval)
	}
}

// rescue returns the jobs whose lease expired to their queue.
func (e *Engine) rescue(ctx context.Context) error {
	total := 0
	defer func() {
		if total > 0 {
			e.log.Info("engine: rescued jobs whose lease expired", "jobs", total)
		}
	}()
	for {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		n, err := e.store.JobRescue(cctx, dutyBatch)
		cancel()
		total += n
		if n > 0 {
			e.cfg.Observer.Rescued(n)
		}
		if err != nil || n < dutyBatch {
			return err
		}
	}
}

// prune deletes the finished jobs older than Retention.
func (e *Engine) prune(ctx context.Context) error {
	before := e.clock.Now().Add(-e.cfg.Retention)
	total := 0
	defer func() {
		if total > 0 {
			e.log.Info("engine: pruned finished jobs", "jobs", total, "before", before)
		}
	}()
	for {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		n, err := e.store.JobPrune(cctx, before, dutyBatch)
		cancel()
		total += n
		if err != nil || n < dutyBatch {
			return err
		}
	}
}

// markOffline marks offline the remote workers without a heartbeat for
// WorkerOfflineAfter, unless this engine started less than that long ago:
// a restarted server (or a new leader) gives workers that long to reach
// it first. Their jobs return to the queue only when their leases expire
// (rescue).
func (e *Engine) markOffline(ctx context.Context) error {
	now := e.clock.Now()
	if now.Sub(e.startedAt) < e.cfg.WorkerOfflineAfter {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	n, err := e.store.WorkerMarkOffline(cctx, now.Add(-e.cfg.WorkerOfflineAfter))
	if n > 0 {
		e.log.Info("engine: marked remote workers offline", "workers", n)
	}
	return err
}
