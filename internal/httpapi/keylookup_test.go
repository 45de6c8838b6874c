package httpapi

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobd/jobd/internal/testutil/teststore"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// heldKeyStore is a real store whose KeyByPrefix counts its calls and,
// when hold is set, waits for it to close after the query has run: the
// query's answer is then a snapshot older than anything done meanwhile.
type heldKeyStore struct {
	store.Store
	calls atomic.Int64
	held  chan struct{} // closed once the held lookup has run its query
	hold  chan struct{}
	once  sync.Once
}

func (s *heldKeyStore) KeyByPrefix(ctx context.Context, prefix string) (*store.APIKey, error) {
	s.calls.Add(1)
	key, err := s.Store.KeyByPrefix(ctx, prefix)
	first := false
	s.once.Do(func() { first = true })
	if first && s.hold != nil {
		close(s.held)
		<-s.hold
	}
	return key, err
}

// lookupKeys opens st's keyLookups over a store holding one API key, with
// the first lookup held until release is called.
func lookupKeys(t *testing.T, st store.Store) (k *keyLookups, hs *heldKeyStore, key store.APIKey, release func()) {
	t.Helper()
	key = store.APIKey{ID: "k1", Name: "one", Prefix: "0123456789ab", Hash: hashKey("x"), Scopes: []string{"submit"}}
	if err := st.KeyCreate(context.Background(), key); err != nil {
		t.Fatalf("KeyCreate: %v", err)
	}
	hs = &heldKeyStore{Store: st, held: make(chan struct{}), hold: make(chan struct{})}
	var once sync.Once
	release = func() { once.Do(func() { close(hs.hold) }) }
	t.Cleanup(release)
	return newKeyLookups(hs), hs, key, release
}

type found struct {
	key *store.APIKey
	err error
}

// startFind calls k.find in a goroutine; its outcome arrives on the channel.
func startFind(k *keyLookups, prefix string) <-chan found {
	ch := make(chan found, 1)
	go func() {
		key, err := k.find(context.Background(), prefix)
		ch <- found{key, err}
	}()
	return ch
}

// waitQueued waits until n requests wait for the lookup after the running one.
func waitQueued(t *testing.T, k *keyLookups, prefix string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		k.mu.Lock()
		p := k.byPrefix[prefix]
		got := 0
		if p != nil {
			got = p.waiting
		}
		k.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests wait for the next lookup, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// A request never takes its answer from a lookup that began before it
// arrived: a key revoked while another request's lookup is in flight is
// refused to every request that arrives after the revocation.
func TestKeyLookupStartsAfterTheRequest(t *testing.T) {
	teststore.Each(t, func(t *testing.T, st store.Store) {
		k, hs, key, release := lookupKeys(t, st)
		first := startFind(k, key.Prefix)
		<-hs.held // the first lookup has found the key, and waits
		if err := st.KeyRevoke(context.Background(), key.ID); err != nil {
			t.Fatalf("KeyRevoke: %v", err)
		}
		second := startFind(k, key.Prefix)
		waitQueued(t, k, key.Prefix, 1)
		release()
		if got := <-first; got.err != nil || got.key == nil || got.key.ID != key.ID {
			t.Fatalf("the request before the revocation: %+v, want the key", got)
		}
		if got := <-second; !errors.Is(got.err, job.ErrNotFound) {
			t.Fatalf("the request after the revocation: key %v, err %v; want job.ErrNotFound", got.key, got.err)
		}
	})
}

// The requests that arrive while a lookup runs share one next lookup.
func TestKeyLookupsAreShared(t *testing.T) {
	teststore.Each(t, func(t *testing.T, st store.Store) {
		k, hs, key, release := lookupKeys(t, st)
		first := startFind(k, key.Prefix)
		<-hs.held
		const waiting = 20
		rest := make([]<-chan found, waiting)
		for i := range rest {
			rest[i] = startFind(k, key.Prefix)
		}
		waitQueued(t, k, key.Prefix, waiting)
		release()
		for _, ch := range append(rest, first) {
			if got := <-ch; got.err != nil || got.key == nil || got.key.ID != key.ID {
				t.Fatalf("find: %+v, want the key", got)
			}
		}
		if n := hs.calls.Load(); n != 2 {
			t.Errorf("%d lookups for %d requests, want 2", n, waiting+1)
		}
		k.mu.Lock()
		defer k.mu.Unlock()
		if len(k.byPrefix) != 0 {
			t.Errorf("%d prefixes still tracked after every lookup ended, want 0", len(k.byPrefix))
		}
	})
}

// A request that gives up stops waiting; the lookup it shared still
// answers the others.
func TestKeyLookupCanceledWaiter(t *testing.T) {
	teststore.Each(t, func(t *testing.T, st store.Store) {
		k, hs, key, release := lookupKeys(t, st)
		first := startFind(k, key.Prefix)
		<-hs.held
		ctx, cancel := context.WithCancel(context.Background())
		gaveUp := make(chan error, 1)
		go func() {
			_, err := k.find(ctx, key.Prefix)
			gaveUp <- err
		}()
		waitQueued(t, k, key.Prefix, 1)
		cancel()
		if err := <-gaveUp; !errors.Is(err, context.Canceled) {
			t.Fatalf("canceled find: %v, want context.Canceled", err)
		}
		release()
		if got := <-first; got.err != nil || got.key == nil {
			t.Fatalf("find: %+v, want the key", got)
		}
	})
}
