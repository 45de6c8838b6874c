package sqlite

import (
	"context"
	"sync"
	"time"

	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/wakeup"
)

// hubs holds one wakeup.Hub per database file in this process, so that
// Store values opened on the same file (two "nodes" in one test, say) see
// each other's notifications (wake-ups and cancel requests), and share
// their view of the queues that count their running jobs. Entries are
// counted by their open Stores and dropped with the last one.
var hubs = struct {
	sync.Mutex
	m map[string]*sharedHub
}{m: make(map[string]*sharedHub)}

type sharedHub struct {
	hub     wakeup.Hub[store.Notification]
	counted countedQueues
	refs    int
}

// acquireHub returns the hub of the file at abs (a cleaned absolute path)
// and its view of the queues that count their running jobs.
func acquireHub(abs string) (*wakeup.Hub[store.Notification], *countedQueues) {
	hubs.Lock()
	defer hubs.Unlock()
	h, ok := hubs.m[abs]
	if !ok {
		h = &sharedHub{counted: countedQueues{names: make(map[string]bool)}}
		hubs.m[abs] = h
	}
	h.refs++
	return &h.hub, &h.counted
}

// countedQueues is this process's view of the file's queues whose limits
// count their running jobs (a global_limit or a partition_limit): a job of
// one that leaves the running state makes room that the queue's claimers
// may be waiting for, and the write that ends it wakes them (wakeups.left).
// A claim by the limited path records what it read of its queue
// (readFlowLimits), and QueueSetLimits what it wrote: the claimers that
// wait for room are those whose claims were refused for want of it, so
// the view knows every queue they wait on. A queue it misses leaves its
// claimers to their pacing delay; one it keeps after its limits were
// lifted elsewhere (another process) costs a wake-up per write that ends
// its jobs.
type countedQueues struct {
	mu    sync.RWMutex
	names map[string]bool
}

// set records whether queue counts its running jobs.
func (c *countedQueues) set(queue string, counted bool) {
	if c == nil {
		return
	}
	c.mu.RLock()
	known := c.names[queue]
	c.mu.RUnlock()
	if known == counted {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if counted {
		c.names[queue] = true
	} else {
		delete(c.names, queue)
	}
}

// has reports whether queue counts its running jobs.
func (c *countedQueues) has(queue string) bool {
	if c == nil {
		return false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.names[queue]
}

// releaseHub drops one reference to the hub of abs.
func releaseHub(abs string) {
	hubs.Lock()
	defer hubs.Unlock()
	if h, ok := hubs.m[abs]; ok {
		h.refs--
		if h.refs <= 0 {
			delete(hubs.m, abs)
		}
	}
}

// Wake tells the listeners of every Store on this file, in this process,
// that queues may have jobs: at once, or inside InTx once it commits.
// With no queue it wakes them for any queue.
func (s *executor) Wake(ctx context.Context, queues ...string) error {
	if s.tx == nil {
		if err := store.CheckNotInTx(ctx, s.owner); err != nil {
			return errorf("sqlite: wake %v: %w", queues, err)
		}
	}
	if len(queues) == 0 {
		queues = []string{""}
	}
	s.afterCommit(func() {
		for _, q := range queues {
			s.wakeQueue(q)
		}
	})
	return nil
}

// wakeQueue tells this file's listeners that queue may have jobs ("" for
// any queue).
func (s *executor) wakeQueue(queue string) {
	s.hub.Send(store.Notification{Queue: queue})
}

// Listen calls notify each time jobs may have become available in a queue
// or the cancel of a running job is requested, until ctx ends; then it
// returns nil. notify must not block: it runs on the goroutine of the
// write that sent the notification, once that write has committed.
func (s *Store) Listen(ctx context.Context, notify func(store.Notification)) error {
	unsubscribe := s.hub.Subscribe(notify)
	defer unsubscribe()
	<-ctx.Done()
	return nil
}

// wakeups collects, during a write, the queues whose jobs become
// available, to be woken once the write has committed (a listener that
// claims at once must see the jobs).
type wakeups struct {
	now    int64
	queues map[string]int64 // queue -> earliest run_at, unix µs
	// bounds holds a queue's least bound of claim order, nil when one of
	// its jobs may sort anywhere.
	bounds  map[string]*store.ClaimBound
	counted *countedQueues
}

// newWakeups collects the wake-ups of a write at now; counted says which
// queues a job's end wakes (left).
func newWakeups(now int64, counted *countedQueues) *wakeups {
	return &wakeups{now: now, counted: counted}
}

// left notes that a job of queue left the running state: when the queue
// counts its running jobs, that made room, and its claimers are woken.
func (w *wakeups) left(queue string) {
	if w.counted.has(queue) {
		w.add(queue, w.now)
	}
}

// add notes that a job of queue is available at runAt (unix µs), which
// may sort anywhere in claim order.
func (w *wakeups) add(queue string, runAt int64) {
	w.note(queue, runAt, nil)
}

// inserted notes a new job of queue at priority, available at runAt (unix
// µs).
func (w *wakeups) inserted(queue string, priority int, runAt int64) {
	w.note(queue, runAt, &store.ClaimBound{Priority: priority, RunAt: time.UnixMicro(runAt)})
}

// note notes that a job of queue is available at runAt, at or after bound
// in claim order (nil: anywhere). The queue's wake-up carries the least of
// the bounds, or none when one of its jobs has none (store.Notification).
func (w *wakeups) note(queue string, runAt int64, bound *store.ClaimBound) {
	if w.queues == nil {
		w.queues = make(map[string]int64)
		w.bounds = make(map[string]*store.ClaimBound)
	}
	at, ok := w.queues[queue]
	if !ok || runAt < at {
		w.queues[queue] = runAt
	}
	least := w.bounds[queue]
	switch {
	case !ok:
		w.bounds[queue] = bound
	case least == nil:
	case bound == nil:
		w.bounds[queue] = nil
	default:
		*least = least.Least(*bound)
	}
}

// send wakes queues whose jobs are available now and schedules the others
// for their run_at, once the transaction that made them available has
// committed (see afterCommit).
func (s *executor) send(w *wakeups) {
	s.afterCommit(func() {
		for q, at := range w.queues {
			if at <= w.now {
				s.hub.Send(store.Notification{Queue: q, Earliest: w.bounds[q]})
			} else {
				s.scheduler.At(q, time.UnixMicro(at))
			}
		}
	})
}
