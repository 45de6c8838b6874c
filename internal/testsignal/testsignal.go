// Package testsignal lets tests wait for the code under test to reach a
// point, instead of sleeping or scanning its logs (after River's
// rivershared/testsignal). Production code holds a Signal and fires it at
// an interesting point (a duty's pass done, an outcome dropped, a server
// listening); a test initialises the Signal before it starts that code,
// then waits on it with a timeout.
//
// An uninitialised Signal costs one atomic load per Fire and keeps
// nothing, so production code fires its signals unconditionally. The
// package does not import testing: waits take the small TB interface.
package testsignal

import (
	"sync"
	"sync/atomic"
	"time"
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
