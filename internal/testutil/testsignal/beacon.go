package testsignal

import (
	"sync"
	"sync/atomic"
	"time"
)

// Beacon is a Signal without values, for a test that waits for a
// condition to hold (a job to reach a state) rather than for one event:
// Until checks the condition again each time the Beacon fires, and at no
// other time. Its zero value is inert until Init.
type Beacon struct {
	p atomic.Pointer[beacon]
}

type beacon struct {
	mu sync.Mutex
	// fired is closed, and replaced, by each Fire.
	fired chan struct{}
}

// Init makes b wake its waiters from now on.
func (b *Beacon) Init() {
	b.p.Store(&beacon{fired: make(chan struct{})})
}

// Fire wakes every wait on b. It never blocks, and does nothing unless b
// was initialised.
func (b *Beacon) Fire() {
	x := b.p.Load()
	if x == nil {
		return
	}
	x.mu.Lock()
	close(x.fired)
	x.fired = make(chan struct{})
	x.mu.Unlock()
}

// Until returns once cond holds, checking it now and after each Fire; it
// fails t, saying what it waited for, when cond does not hold within
// Timeout. A Fire between a check and the wait that follows is never
// missed.
func (b *Beacon) Until(t TB, what string, cond func() bool) {
	t.Helper()
	x := b.p.Load()
	if x == nil {
		t.Fatalf("testsignal: waiting for %s on a Beacon that was never initialised (Init it before starting the code under test)", what)
		return
	}
	timer := time.NewTimer(Timeout)
	defer timer.Stop()
	for {
		x.mu.Lock()
		fired := x.fired
		x.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-fired:
		case <-timer.C:
			t.Fatalf("testsignal: timed out after %s waiting for %s", Timeout, what)
			return
		}
	}
}
