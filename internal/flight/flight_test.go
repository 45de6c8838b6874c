package flight

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// source is a value that changes, read by a lookup that counts its calls
// and holds the first one, after it has read, until release.
type source struct {
	value atomic.Int64
	calls atomic.Int64
	held  chan struct{} // closed once the first lookup has read
	hold  chan struct{}
	once  sync.Once
}

func newSource(t *testing.T) (*source, *Group[string, int64], func()) {
	s := &source{held: make(chan struct{}), hold: make(chan struct{})}
	var once sync.Once
	release := func() { once.Do(func() { close(s.hold) }) }
	t.Cleanup(release)
	g := New(func(ctx context.Context, key string) (int64, error) {
		s.calls.Add(1)
		v := s.value.Load()
		first := false
		s.once.Do(func() { first = true })
		if first {
			close(s.held)
			<-s.hold
		}
		return v, nil
	}, time.Minute)
	return s, g, release
}

type answer struct {
	v   int64
	err error
}

func start(g *Group[string, int64], ctx context.Context) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		v, err := g.Do(ctx, "k")
		ch <- answer{v, err}
	}()
	return ch
}

// waitQueued polls, within a bounded deadline, until n callers wait for
// the next lookup.
func waitQueued(t *testing.T, g *Group[string, int64], n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for g.Waiting("k") != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d callers wait for the next lookup, want %d", g.Waiting("k"), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// A caller never takes its answer from a lookup that began before it
// called: a change made while a lookup is in flight is seen by every
// caller that arrives after it; the callers of one burst share one next
// lookup, and the key is forgotten once no lookup runs.
func TestFreshAndShared(t *testing.T) {
	s, g, release := newSource(t)
	s.value.Store(1)
	first := start(g, context.Background())
	<-s.held
	s.value.Store(2)
	const waiting = 20
	rest := make([]<-chan answer, waiting)
	for i := range rest {
		rest[i] = start(g, context.Background())
	}
	waitQueued(t, g, waiting)
	release()
	if got := <-first; got.err != nil || got.v != 1 {
		t.Fatalf("the caller before the change: %+v, want 1", got)
	}
	for _, ch := range rest {
		if got := <-ch; got.err != nil || got.v != 2 {
			t.Fatalf("a caller after the change: %+v, want 2", got)
		}
	}
	if n := s.calls.Load(); n != 2 {
		t.Errorf("%d lookups for %d callers, want 2", n, waiting+1)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.byKey) != 0 {
		t.Errorf("%d keys tracked after every lookup ended, want 0", len(g.byKey))
	}
}

// A caller that gives up stops waiting; the lookup it shared still
// answers the others.
func TestCanceledWaiter(t *testing.T) {
	s, g, release := newSource(t)
	first := start(g, context.Background())
	<-s.held
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := start(g, ctx)
	waitQueued(t, g, 1)
	cancel()
	if got := <-gaveUp; !errors.Is(got.err, context.Canceled) {
		t.Fatalf("the canceled caller: %+v, want context.Canceled", got)
	}
	release()
	if got := <-first; got.err != nil {
		t.Fatalf("the first caller: %+v", got)
	}
}
