package engine

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// Flow control (package flow) is enforced by the store, at each claim.
// The engine only paces its claims of the queues that have any: a claim
// of a limited queue that comes back short is retried after a short
// delay, or at once on a wake-up of the queue, whichever comes first
// (producer.run waits for both). A job that leaves the running state in a
// queue under a global or partition limit wakes the queue's claimers on
// every node once its end is written (see store.JobStore.JobFinish), so
// that the slot it frees is taken at once; the delay is the fallback for
// a wake-up missed, and what frees room without one (the rate's next
// start, a throttle ending). An unlimited queue waits for wake-ups and
// the poll, as it always has.
const (
	// flowRefresh is how often the engine reads the queues' settings
	// (store.QueueSettings): one query per node, for all queues.
	flowRefresh = time.Second
	// limitPace is the re-claim delay of a queue under a global or
	// partition limit whose claim came back short, when no wake-up came
	// first: a slot that another node (or a remote worker) frees is taken
	// within about this long even if its wake-up was missed.
	limitPace = 100 * time.Millisecond
	// minPace bounds every pacing delay below, a fast rate's included.
	minPace = 10 * time.Millisecond
)

// flowView is this node's view of the queues' flow control, at most
// flowRefresh old while it is needed (some pool, or some remote worker's
// long-polling claim, is waiting on a queue). It holds only the queues
// that are limited or throttled.
type flowView struct {
	mu       sync.RWMutex
	settings map[string]store.QueueSettings
	// fresh says that the view was read at the last refresh: a view that
	// skipped refreshes (nobody needed it) wakes every limited queue when
	// it is read again, for the claimers that waited on it meanwhile.
	fresh bool
	// kick asks the refresh loop for a read now (a first subscriber).
	kick chan struct{}
	// subscribers counts Subscribe's open subscriptions.
	subscribers atomic.Int64
}

func newFlowView() *flowView {
	return &flowView{kick: make(chan struct{}, 1)}
}

// get returns the settings of queue, false for an unlimited queue that
// is not throttled.
func (v *flowView) get(queue string) (store.QueueSettings, bool) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	s, ok := v.settings[queue]
	return s, ok
}

// replace installs settings and returns the queues whose settings
// changed (all of them after a pause of the refreshes).
func (v *flowView) replace(all []store.QueueSettings) (changed []string) {
	next := make(map[string]store.QueueSettings)
	for _, s := range all {
		if s.Limits.Limited() || s.ThrottledUntil != nil || len(s.Throttled) > 0 {
			next[s.Name] = s
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for name, s := range next {
		if old, ok := v.settings[name]; !v.fresh || !ok || !reflect.DeepEqual(old, s) {
			changed = append(changed, name)
		}
	}
	for name := range v.settings {
		if _, ok := next[name]; !ok {
			changed = append(changed, name)
		}
	}
	v.settings, v.fresh = next, true
	return changed
}

// pace is how soon a claim of queue that came back short should be tried
// again at now, and false for a queue that is neither limited nor
// throttled, or paused (its wake-ups and the poll suffice: a resume wakes
// it). poll bounds it, but for a throttle of the whole queue, which ends
// when it ends.
func (v *flowView) pace(queue string, now time.Time, poll time.Duration) (time.Duration, bool) {
	s, ok := v.get(queue)
	if !ok || s.Paused {
		return 0, false
	}
	if s.ThrottledUntil != nil && s.ThrottledUntil.After(now) {
		return max(s.ThrottledUntil.Sub(now), minPace), true
	}
	d, paced := poll, false
	if s.Limits.GlobalLimit > 0 || s.Limits.PartitionLimit > 0 {
		d, paced = min(d, limitPace), true
	}
	if r := s.Limits.Rate; r != nil {
		// Twice per interval: with the rate's Slack of half an interval,
		// a claimer on its own keeps the rate's schedule.
		d, paced = min(d, r.Interval()/2), true
	}
	// The earliest partition's throttle: the work left may all be in
	// throttled partitions.
	for _, p := range s.Throttled {
		if p.Until.After(now) {
			d, paced = min(d, p.Until.Sub(now)), true
			break
		}
	}
	if !paced {
		return 0, false
	}
	return min(max(d, minPace), poll), true
}

// ClaimPace is how soon a claim of queue that came back short should be
// tried again: the pacing of this engine's pools, which the HTTP API
// applies to the long-polling claims of remote workers. 0 for a queue
// that is neither limited nor throttled, whose wake-ups suffice. It reads
// the engine's view of the queues' settings, at most a second old while
// a pool or a subscriber (Subscribe) needs it.
func (e *Engine) ClaimPace(queue string) time.Duration {
	d, _ := e.flow.pace(queue, e.clock.Now(), e.cfg.PollInterval)
	return d
}

// watchFlow refreshes the flow view every flowRefresh until ctx ends,
// while this engine has pools or subscribers, and wakes the claimers of
// each queue whose settings changed. It reads nothing while nobody needs
// the view.
func (e *Engine) watchFlow(ctx context.Context) {
	h := health{log: e.log, what: "read of the queues' settings", point: &e.points.health}
	t := e.clock.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		case <-e.flow.kick:
		}
		if len(e.producers) == 0 && e.flow.subscribers.Load() == 0 {
			e.flow.mu.Lock()
			e.flow.fresh = false
			e.flow.mu.Unlock()
			t.Reset(flowRefresh)
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		all, err := e.store.QueueSettings(cctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			h.fail(err)
		} else {
			h.ok()
			for _, q := range e.flow.replace(all) {
				e.wakeQueue(q)
			}
			e.points.flowRead.Report(struct{}{})
		}
		t.Reset(flowRefresh)
	}
}

// applyLimits writes the flow control of every configured queue that
// sets any (QueueConfig.Limits), retrying a failing store with backoff
// until ctx ends.
func (e *Engine) applyLimits(ctx context.Context) {
	h := health{log: e.log, what: "write of the queues' configured limits", point: &e.points.health}
	for _, q := range e.cfg.Queues {
		if !q.Limits.Limited() {
			continue
		}
		delay := retryMin
		for {
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			err := e.store.QueueSetLimits(cctx, q.Queue, q.Limits)
			cancel()
			if ctx.Err() != nil {
				return
			}
			if err == nil {
				h.ok()
				e.log.Info("engine: queue limits set from the configuration", "queue", q.Queue, "limits", q.Limits.String())
				break
			}
			var ve *job.ValidationError
			if errors.As(err, &ve) { // refused for good: trying again changes nothing
				e.log.Error("engine: the store refused a queue's configured limits; the queue keeps its stored ones",
					"queue", q.Queue, "limits", q.Limits.String(), "err", err)
				break
			}
			h.fail(err)
			if !sleep(ctx, e.clock, delay) {
				return
			}
			delay = nextRetry(delay)
		}
	}
}

// needed asks the refresh loop for a read at once if the view went stale
// while nobody needed it.
func (v *flowView) needed() {
	v.mu.RLock()
	fresh := v.fresh
	v.mu.RUnlock()
	if fresh {
		return
	}
	select {
	case v.kick <- struct{}{}:
	default:
	}
}
