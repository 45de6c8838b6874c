package storetest

import (
	"bytes"
	"crypto/sha256"
	"slices"
	"testing"
	"time"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var keyTests = []test{
	{"Lifecycle", testKeyLifecycle},
}

func sameKey(a, b store.APIKey) bool {
	return a.ID == b.ID && a.Name == b.Name && a.Prefix == b.Prefix && bytes.Equal(a.Hash, b.Hash) &&
		slices.Equal(a.Scopes, b.Scopes) && a.CreatedAt.Equal(b.CreatedAt)
}

func testKeyLifecycle(t *testing.T, e *env) {
	h1, h2 := sha256.Sum256([]byte("secret-one")), sha256.Sum256([]byte("secret-two"))
	k1 := store.APIKey{ID: "key-1", Name: "ci", Prefix: "jobd_ab12", Hash: h1[:], Scopes: []string{"jobs:read", "jobs:write"}, CreatedAt: e.now()}
	k2 := store.APIKey{ID: "key-2", Name: "worker", Prefix: "jobd_cd34", Hash: h2[:], Scopes: []string{"worker"}, CreatedAt: e.now().Add(time.Second)}
	for _, k := range []store.APIKey{k1, k2} {
		if err := e.s.KeyCreate(t.Context(), k); err != nil {
			t.Fatalf("KeyCreate %s: %v", k.ID, err)
		}
	}
	list := func() []store.APIKey {
		keys, err := e.s.KeyList(t.Context())
		if err != nil {
			t.Fatalf("KeyList: %v", err)
		}
		return keys
	}
	if got := list(); len(got) != 2 || !sameKey(got[0], k1) || !sameKey(got[1], k2) {
		t.Fatalf("KeyList = %+v, want %+v oldest first", got, []store.APIKey{k1, k2})
	}
	got, err := e.s.KeyByPrefix(t.Context(), k2.Prefix)
	if err != nil || !sameKey(*got, k2) {
		t.Fatalf("KeyByPrefix %q = %+v, %v; want %+v", k2.Prefix, got, err, k2)
	}
	_, err = e.s.KeyByPrefix(t.Context(), "jobd_zz99")
	wantErr(t, "KeyByPrefix of an unknown prefix", err, job.ErrNotFound)

	if err := e.s.KeyRevoke(t.Context(), k1.ID); err != nil {
		t.Fatalf("KeyRevoke: %v", err)
	}
	_, err = e.s.KeyByPrefix(t.Context(), k1.Prefix)
	wantErr(t, "KeyByPrefix of a revoked key", err, job.ErrNotFound)
	if got := list(); len(got) != 1 || !sameKey(got[0], k2) {
		t.Fatalf("KeyList after revoke = %+v, want only %s", got, k2.ID)
	}
	wantErr(t, "KeyRevoke of a revoked key", e.s.KeyRevoke(t.Context(), k1.ID), job.ErrNotFound)
	wantErr(t, "KeyRevoke of an unknown key", e.s.KeyRevoke(t.Context(), "key-404"), job.ErrNotFound)
}
