package storetest

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var keyTests = []test{
	{"Lifecycle", testKeyLifecycle},
	{"Duplicate", testKeyDuplicate},
	{"Invalid", testKeyInvalid},
	{"Queues", testKeyQueues},
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

// testKeyDuplicate: a key whose id or prefix is taken is refused with
// job.ErrDuplicate, and the first one stays.
func testKeyDuplicate(t *testing.T, e *env) {
	h := sha256.Sum256([]byte("secret"))
	k := store.APIKey{ID: "key-1", Name: "ci", Prefix: "jobd_ab12", Hash: h[:], Scopes: []string{"read"}}
	if err := e.s.KeyCreate(t.Context(), k); err != nil {
		t.Fatalf("KeyCreate: %v", err)
	}
	sameID, samePrefix := k, k
	sameID.Prefix, samePrefix.ID = "jobd_cd34", "key-2"
	for what, dup := range map[string]store.APIKey{"id": sameID, "prefix": samePrefix} {
		wantErr(t, "KeyCreate with a taken "+what, e.s.KeyCreate(t.Context(), dup), job.ErrDuplicate)
	}
	if keys, err := e.s.KeyList(t.Context()); err != nil || len(keys) != 1 || keys[0].ID != k.ID {
		t.Fatalf("KeyList = %+v, %v; want only %s", keys, err, k.ID)
	}
}

// testKeyInvalid: a key record without its id, prefix or hash is refused
// with a validation error, and nothing is stored.
func testKeyInvalid(t *testing.T, e *env) {
	h := sha256.Sum256([]byte("secret"))
	for _, k := range []store.APIKey{
		{Name: "no id", Prefix: "jobd_ab12", Hash: h[:]},
		{ID: "key-1", Name: "no prefix", Hash: h[:]},
		{ID: "key-2", Name: "no hash", Prefix: "jobd_cd34"},
	} {
		var ve *job.ValidationError
		if err := e.s.KeyCreate(t.Context(), k); !errors.As(err, &ve) {
			t.Fatalf("KeyCreate of a key with %s: %v, want a ValidationError", k.Name, err)
		}
	}
	if keys, err := e.s.KeyList(t.Context()); err != nil || len(keys) != 0 {
		t.Fatalf("KeyList = %+v, %v; want none", keys, err)
	}
}
