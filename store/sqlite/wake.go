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
// each other's notifications (wake-ups and cancel requests). Entries are counted by their open Stores and
// dropped with the last one.
var hubs = struct {
	sync.Mutex
	m map[string]*sharedHub
}{m: make(map[string]*sharedHub)}

type sharedHub struct {
	hub  wakeup.Hub[store.Notification]
	refs int
}

// acquireHub returns the hub of the file at abs (a cleaned absolute path).
func acquireHub(abs string) *wakeup.Hub[store.Notification] {
	hubs.Lock()
	defer hubs.Unlock()
	h, ok := hubs.m[abs]
	if !ok {
		h = &sharedHub{}
		hubs.m[abs] = h
	}
	h.refs++
	return &h.hub
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
}

func newWakeups(now int64) *wakeups { return &wakeups{now: now} }

// add notes that a job of queue is available at runAt (unix µs).
func (w *wakeups) add(queue string, runAt int64) {
	if w.queues == nil {
		w.queues = make(map[string]int64)
	}
	if at, ok := w.queues[queue]; !ok || runAt < at {
		w.queues[queue] = runAt
	}
}

// send wakes queues whose jobs are available now and schedules the others
// for their run_at, once the transaction that made them available has
// committed (see afterCommit).
func (s *executor) send(w *wakeups) {
	s.afterCommit(func() {
		for q, at := range w.queues {
			if at <= w.now {
				s.wakeQueue(q)
			} else {
				s.scheduler.At(q, time.UnixMicro(at))
			}
		}
	})
}
