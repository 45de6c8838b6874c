package httpapi

import (
	"context"
	"sync"
	"time"

	"github.com/jobd/jobd/store"
)

// keyLookupTimeout bounds one shared lookup of an API key; each request
// that waits for it can give up sooner, with its own context.
const keyLookupTimeout = 10 * time.Second

// keyLookups finds API keys by prefix with at most one lookup of a prefix
// in flight: the requests that arrive while one runs wait for it to end and
// then share the next. Every lookup a request is answered from started
// after the request arrived, so a key revoked before a request arrives is
// never accepted for it, as with a lookup per request; a burst of requests
// with one key costs two queries instead of one each.
type keyLookups struct {
	store store.KeyStore

	mu       sync.Mutex
	byPrefix map[string]*prefixLookups
}

// prefixLookups is the state of a prefix whose lookup runs (it is
// forgotten when none does): next, when not nil, is the lookup that starts
// when the running one ends.
type prefixLookups struct {
	next    *keyLookup
	waiting int // the requests waiting for next
}

// keyLookup is one query's outcome, shared by the requests that wait for
// it; done is closed once key and err are set.
type keyLookup struct {
	done chan struct{}
	key  *store.APIKey
	err  error
}

func newKeyLookups(st store.KeyStore) *keyLookups {
	return &keyLookups{store: st, byPrefix: make(map[string]*prefixLookups)}
}

// find returns the key whose prefix is prefix, as KeyByPrefix does, from
// a lookup that starts no earlier than this call.
func (k *keyLookups) find(ctx context.Context, prefix string) (*store.APIKey, error) {
	k.mu.Lock()
	p := k.byPrefix[prefix]
	var l *keyLookup
	switch {
	case p == nil:
		p = &prefixLookups{}
		k.byPrefix[prefix] = p
		l = &keyLookup{done: make(chan struct{})}
		go k.run(ctx, prefix, p, l)
	case p.next != nil:
		l = p.next
		p.waiting++
	default:
		l = &keyLookup{done: make(chan struct{})}
		p.next = l
		p.waiting = 1
	}
	k.mu.Unlock()
	select {
	case <-l.done:
		return l.key, l.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// run performs l, then each lookup that was queued behind it, until none
// is; then it forgets the prefix. The query outlives the request that
// started it (others may share it), within keyLookupTimeout.
func (k *keyLookups) run(ctx context.Context, prefix string, p *prefixLookups, l *keyLookup) {
	ctx = context.WithoutCancel(ctx)
	for l != nil {
		qctx, cancel := context.WithTimeout(ctx, keyLookupTimeout)
		l.key, l.err = k.store.KeyByPrefix(qctx, prefix)
		cancel()
		close(l.done)
		k.mu.Lock()
		l, p.next, p.waiting = p.next, nil, 0
		if l == nil {
			delete(k.byPrefix, prefix)
		}
		k.mu.Unlock()
	}
}
