// Package flight shares lookups among the requests that need the same
// answer at the same time, without ever answering a request from a
// lookup that began before it arrived (httpapi's API-key lookups work
// the same way; the dashboard's sessions use this one).
package flight

import (
	"context"
	"sync"
	"time"
)

// Group runs Lookup for a key with at most one lookup of that key in
// flight: the callers that arrive while one runs wait for it to end and
// then share the next one. Every answer a caller gets comes from a lookup
// that started after it called, so a change committed before a caller
// arrived (a logout, a revoked key) is always seen by it, as with a
// lookup per caller; a burst of callers of one key costs two lookups.
type Group[K comparable, V any] struct {
	lookup  func(ctx context.Context, key K) (V, error)
	timeout time.Duration

	mu    sync.Mutex
	byKey map[K]*keyState[V]
}

// keyState is the state of a key whose lookup runs (it is forgotten when
// none does): next, when not nil, is the lookup that starts when the
// running one ends.
type keyState[V any] struct {
	next    *call[V]
	waiting int // the callers waiting for next
}

// call is one lookup's outcome, shared by its callers; done is closed
// once val and err are set.
type call[V any] struct {
	done chan struct{}
	val  V
	err  error
}

// New returns a Group over lookup; timeout bounds each lookup, which
// outlives the caller that started it (others may share it).
func New[K comparable, V any](lookup func(ctx context.Context, key K) (V, error), timeout time.Duration) *Group[K, V] {
	return &Group[K, V]{lookup: lookup, timeout: timeout, byKey: make(map[K]*keyState[V])}
}

// Do returns lookup's answer for key, from a lookup that starts no
// earlier than this call; ctx ending gives up the wait.
func (g *Group[K, V]) Do(ctx context.Context, key K) (V, error) {
	g.mu.Lock()
	st := g.byKey[key]
	var c *call[V]
	switch {
	case st == nil:
		st = &keyState[V]{}
		g.byKey[key] = st
		c = &call[V]{done: make(chan struct{})}
		go g.run(ctx, key, st, c)
	case st.next != nil:
		c = st.next
		st.waiting++
	default:
		c = &call[V]{done: make(chan struct{})}
		st.next = c
		st.waiting = 1
	}
	g.mu.Unlock()
	select {
	case <-c.done:
		return c.val, c.err
	case <-ctx.Done():
		var zero V
		return zero, ctx.Err()
	}
}

// run performs c, then each lookup queued behind it, until none is; then
// it forgets the key.
func (g *Group[K, V]) run(ctx context.Context, key K, st *keyState[V], c *call[V]) {
	ctx = context.WithoutCancel(ctx)
	for c != nil {
		lctx, cancel := context.WithTimeout(ctx, g.timeout)
		c.val, c.err = g.lookup(lctx, key)
		cancel()
		close(c.done)
		g.mu.Lock()
		c, st.next, st.waiting = st.next, nil, 0
		if c == nil {
			delete(g.byKey, key)
		}
		g.mu.Unlock()
	}
}

// Waiting reports how many callers wait for the lookup of key queued
// behind the running one (for tests).
func (g *Group[K, V]) Waiting(key K) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if st := g.byKey[key]; st != nil {
		return st.waiting
	}
	return 0
}
