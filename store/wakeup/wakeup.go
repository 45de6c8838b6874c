// Package wakeup holds the two small pieces that store drivers share to
// wake idle workers: a Hub that fans signals ("queue may have jobs", "stop
// that job") out to in-process listeners, and a Scheduler that sends a
// queue's wake-up when a delayed job's run_at passes.
package wakeup

import (
	"sync"
	"time"

	"github.com/jobd/jobd/clock"
)

// Hub fans signals of type T out to listeners in this process. The zero
// value is ready to use.
type Hub[T any] struct {
	mu        sync.Mutex
	next      int
	listeners map[int]func(T)
}

// Subscribe registers fn until the returned function is called.
func (h *Hub[T]) Subscribe(fn func(T)) (unsubscribe func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.listeners == nil {
		h.listeners = make(map[int]func(T))
	}
	id := h.next
	h.next++
	h.listeners[id] = fn
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.listeners, id)
	}
}

// Send calls every listener with v. Listeners must not block.
func (h *Hub[T]) Send(v T) {
	h.mu.Lock()
	fns := make([]func(T), 0, len(h.listeners))
	for _, fn := range h.listeners {
		fns = append(fns, fn)
	}
	h.mu.Unlock()
	for _, fn := range fns {
		fn(v)
	}
}

// Scheduler calls a function for a queue when a time passes, keeping only
// the earliest pending time per queue. It is the fast path for delayed jobs
// and retries; the workers' slow poll covers a process that dies first.
type Scheduler struct {
	clock clock.Clock
	fire  func(queue string)

	mu      sync.Mutex
	pending map[string]*entry
	closed  bool
}

type entry struct {
	at    time.Time
	timer clock.Timer
	done  chan struct{}
}

// NewScheduler returns a scheduler that calls fire on c's time.
func NewScheduler(c clock.Clock, fire func(queue string)) *Scheduler {
	if c == nil {
		c = clock.Real
	}
	return &Scheduler{clock: c, fire: fire, pending: make(map[string]*entry)}
}

// At arranges for fire(queue) at t (at once if t has passed). A later time
// for a queue that already has an earlier one pending is dropped: the
// earlier wake-up makes workers claim, and they come back to the queue
// until it is empty.
func (s *Scheduler) At(queue string, t time.Time) {
	d := t.Sub(s.clock.Now())
	if d <= 0 {
		s.fire(queue)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if e, ok := s.pending[queue]; ok {
		if !t.Before(e.at) {
			return
		}
		if e.timer.Stop() {
			close(e.done)
		}
	}
	e := &entry{at: t, timer: s.clock.NewTimer(d), done: make(chan struct{})}
	s.pending[queue] = e
	go s.wait(queue, e)
}

func (s *Scheduler) wait(queue string, e *entry) {
	select {
	case <-e.timer.C():
	case <-e.done:
		return
	}
	s.mu.Lock()
	if s.pending[queue] == e {
		delete(s.pending, queue)
	}
	closed := s.closed
	s.mu.Unlock()
	if !closed {
		s.fire(queue)
	}
}

// Close stops every pending timer; At does nothing afterwards.
func (s *Scheduler) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for q, e := range s.pending {
		if e.timer.Stop() {
			close(e.done)
		}
		delete(s.pending, q)
	}
}
