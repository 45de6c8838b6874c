// Package testsignal lets tests wait for the code under test to reach a
// point, instead of sleeping or scanning its logs (after River's
// rivershared/testsignal). Production code reports at an interesting
// point (a duty's pass done, an outcome dropped, a server listening)
// through an observe.Point, which is inert until something attaches to
// it; a test takes the Signal attached to that point (Of), initialises it
// before it starts the code, then waits on it with a timeout.
//
// Only tests import this package. It does not import testing: waits take
// the small TB interface.
package testsignal

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/jobd/jobd/observe"
)

// Timeout bounds every wait. It only stops a hung test: a healthy one on
// a slow, shared machine is never near it.
const Timeout = 30 * time.Second

// keep is how many fired values an initialised Signal keeps unread; when
// it is full, the oldest is dropped.
const keep = 1024

// TB is the part of testing.TB that a wait uses.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Signal is a point in the code under test that tests wait for. Its zero
// value is inert: Fire does nothing until Init.
type Signal[T any] struct {
	p atomic.Pointer[fired[T]]
}

// fired holds an initialised Signal's unread values.
type fired[T any] struct {
	mu     sync.Mutex
	values []T
	// more is closed, and replaced, by each Fire.
	more chan struct{}
}

// Init makes s keep the values fired from now on for the waits. Call it
// before starting the code that fires s.
func (s *Signal[T]) Init() {
	s.p.Store(&fired[T]{more: make(chan struct{})})
}

// Fire records v for the waits, dropping the oldest unread value when
// too many are kept. It never blocks, and does nothing unless s was
// initialised.
func (s *Signal[T]) Fire(v T) {
	f := s.p.Load()
	if f == nil {
		return
	}
	f.mu.Lock()
	if len(f.values) == keep {
		f.values = f.values[1:]
	}
	f.values = append(f.values, v)
	close(f.more)
	f.more = make(chan struct{})
	f.mu.Unlock()
}

// Wait removes and returns the oldest unread value, waiting for one up to
// Timeout; then it fails t, saying what it waited for.
func (s *Signal[T]) Wait(t TB, what string) T {
	t.Helper()
	return s.WaitFor(t, what, func(T) bool { return true })
}

// WaitFor removes and returns the oldest unread value that satisfies ok,
// waiting for one up to Timeout; then it fails t. Values that do not
// satisfy ok stay for later waits.
func (s *Signal[T]) WaitFor(t TB, what string, ok func(T) bool) T {
	t.Helper()
	f := s.p.Load()
	if f == nil {
		t.Fatalf("testsignal: waiting for %s on a Signal that was never initialised (Init it before starting the code under test)", what)
		var zero T
		return zero
	}
	timer := time.NewTimer(Timeout)
	defer timer.Stop()
	for {
		f.mu.Lock()
		for i, v := range f.values {
			if ok(v) {
				f.values = append(f.values[:i:i], f.values[i+1:]...)
				f.mu.Unlock()
				return v
			}
		}
		more := f.more
		f.mu.Unlock()
		select {
		case <-more:
		case <-timer.C:
			t.Fatalf("testsignal: timed out after %s waiting for %s", Timeout, what)
			var zero T
			return zero
		}
	}
}

// Drain discards the unread values: later waits see only what fires
// after it.
func (s *Signal[T]) Drain() { s.Pending() }

// Pending removes and returns the unread values, oldest first, without
// waiting.
func (s *Signal[T]) Pending() []T {
	f := s.p.Load()
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	vs := f.values
	f.values = nil
	return vs
}

// attached holds the Signal attached to each point (Of), by the point's
// address.
var attached sync.Map

// Of returns the Signal attached to p, attaching a new one on the first
// call: every call for one point returns the same Signal, so a test may
// initialise it in one place and wait on it in another. Like any Signal,
// it keeps nothing until Init.
func Of[T any](p *observe.Point[T]) *Signal[T] {
	if s, ok := attached.Load(p); ok {
		return s.(*Signal[T])
	}
	s, loaded := attached.LoadOrStore(p, new(Signal[T]))
	sig := s.(*Signal[T])
	if !loaded {
		p.Attach(sig.Fire)
	}
	return sig
}
