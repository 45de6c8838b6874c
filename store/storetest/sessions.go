package storetest

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

var sessionTests = []test{
	{"Lifecycle", testSessionLifecycle},
	{"Expiry", testSessionExpiry},
	{"KeyRevoked", testSessionKeyRevoked},
	{"Duplicate", testSessionDuplicate},
	{"Invalid", testSessionInvalid},
}

// newSessionKey stores an API key for sessions to begin with.
func newSessionKey(t *testing.T, e *env, id, prefix string) store.APIKey {
	t.Helper()
	h := sha256.Sum256([]byte("secret of " + id))
	k := store.APIKey{ID: id, Name: id, Prefix: prefix, Hash: h[:], Scopes: []string{"read", "admin"}}
	if err := e.s.KeyCreate(t.Context(), k); err != nil {
		t.Fatalf("KeyCreate: %v", err)
	}
	return k
}

func createSession(t *testing.T, e *env, s store.Session, ttl time.Duration) *store.Session {
	t.Helper()
	got, err := e.s.SessionCreate(t.Context(), s, ttl)
	if err != nil {
		t.Fatalf("SessionCreate: %v", err)
	}
	return got
}

func getSession(t *testing.T, s store.Store, id []byte) *store.Session {
	t.Helper()
	got, err := s.SessionGet(t.Context(), id)
	if err != nil {
		t.Fatalf("SessionGet: %v", err)
	}
	return got
}

// testSessionLifecycle: a session of the admin secret and one of a key are
// created now and expire after their ttl; SessionGet finds each, on any
// node, the key's with its key exactly as KeyByPrefix reads it; a deleted
// session is gone.
func testSessionLifecycle(t *testing.T, e *env) {
	k := newSessionKey(t, e, "key-1", "jobd_ab12")
	admin := store.Session{ID: store.SessionID([]byte("token-admin")), SecretTag: []byte("tag of the secret")}
	keyed := store.Session{ID: store.SessionID([]byte("token-key")), KeyID: k.ID}
	for _, s := range []store.Session{admin, keyed} {
		got := createSession(t, e, s, 12*time.Hour)
		if !got.CreatedAt.Equal(e.now()) || !got.ExpiresAt.Equal(e.now().Add(12*time.Hour)) {
			t.Fatalf("SessionCreate: created %v, expires %v; want %v and 12h later", got.CreatedAt, got.ExpiresAt, e.now())
		}
	}
	other := e.otherNode(t)
	for _, st := range []store.Store{e.s, other} {
		got := getSession(t, st, admin.ID)
		if got.KeyID != "" || got.Key != nil || !bytes.Equal(got.SecretTag, admin.SecretTag) || !bytes.Equal(got.ID, admin.ID) ||
			!got.ExpiresAt.Equal(e.now().Add(12*time.Hour)) {
			t.Fatalf("SessionGet of the admin's session = %+v", got)
		}
		got = getSession(t, st, keyed.ID)
		want, err := e.s.KeyByPrefix(t.Context(), k.Prefix)
		if err != nil {
			t.Fatal(err)
		}
		if got.KeyID != k.ID || len(got.SecretTag) != 0 || !reflect.DeepEqual(got.Key, want) {
			t.Fatalf("SessionGet of the key's session = %+v with key %+v; want key %+v as KeyByPrefix reads it", got, got.Key, want)
		}
	}
	if err := other.SessionDelete(t.Context(), admin.ID); err != nil {
		t.Fatalf("SessionDelete: %v", err)
	}
	_, err := e.s.SessionGet(t.Context(), admin.ID)
	wantErr(t, "SessionGet of a deleted session", err, job.ErrNotFound)
	wantErr(t, "SessionDelete again", e.s.SessionDelete(t.Context(), admin.ID), job.ErrNotFound)
	_, err = e.s.SessionGet(t.Context(), store.SessionID([]byte("never")))
	wantErr(t, "SessionGet of an unknown id", err, job.ErrNotFound)
	getSession(t, e.s, keyed.ID) // the other one stays
}

// testSessionExpiry: a session is found until its expiry, and not from
// then on.
func testSessionExpiry(t *testing.T, e *env) {
	s := store.Session{ID: store.SessionID([]byte("token")), SecretTag: []byte("tag")}
	createSession(t, e, s, time.Hour)
	e.clk.Advance(time.Hour - time.Microsecond)
	getSession(t, e.s, s.ID)
	e.clk.Advance(time.Microsecond)
	_, err := e.s.SessionGet(t.Context(), s.ID)
	wantErr(t, "SessionGet at its expiry", err, job.ErrNotFound)
	// A login prunes it; a new session of the same id is then accepted.
	createSession(t, e, store.Session{ID: store.SessionID([]byte("other")), SecretTag: []byte("tag")}, time.Hour)
	createSession(t, e, s, time.Hour)
	getSession(t, e.s, s.ID)
}

// testSessionKeyRevoked: revoking a session's key ends the session, and
// only it.
func testSessionKeyRevoked(t *testing.T, e *env) {
	k1 := newSessionKey(t, e, "key-1", "jobd_ab12")
	k2 := newSessionKey(t, e, "key-2", "jobd_cd34")
	s1 := store.Session{ID: store.SessionID([]byte("one")), KeyID: k1.ID}
	s2 := store.Session{ID: store.SessionID([]byte("two")), KeyID: k2.ID}
	createSession(t, e, s1, time.Hour)
	createSession(t, e, s2, time.Hour)
	if err := e.s.KeyRevoke(t.Context(), k1.ID); err != nil {
		t.Fatal(err)
	}
	_, err := e.s.SessionGet(t.Context(), s1.ID)
	wantErr(t, "SessionGet of a revoked key's session", err, job.ErrNotFound)
	if got := getSession(t, e.s, s2.ID); got.Key == nil || got.Key.ID != k2.ID {
		t.Fatalf("the other key's session: %+v", got)
	}
	// A session of a key that does not exist is never found.
	s3 := store.Session{ID: store.SessionID([]byte("three")), KeyID: "key-404"}
	createSession(t, e, s3, time.Hour)
	_, err = e.s.SessionGet(t.Context(), s3.ID)
	wantErr(t, "SessionGet of a session of no key", err, job.ErrNotFound)
}

// testSessionDuplicate: a taken id is refused with job.ErrDuplicate and
// the first session stays as it was.
func testSessionDuplicate(t *testing.T, e *env) {
	s := store.Session{ID: store.SessionID([]byte("token")), SecretTag: []byte("first")}
	createSession(t, e, s, time.Hour)
	again := s
	again.SecretTag = []byte("second")
	_, err := e.s.SessionCreate(t.Context(), again, time.Hour)
	wantErr(t, "SessionCreate of a taken id", err, job.ErrDuplicate)
	if got := getSession(t, e.s, s.ID); string(got.SecretTag) != "first" {
		t.Fatalf("the first session became %+v", got)
	}
}

// testSessionInvalid: a session without a 32-byte id, with both or neither
// of a key and a tag, or with a bad ttl, is refused with a validation
// error naming the field, and nothing is stored.
func testSessionInvalid(t *testing.T, e *env) {
	id := store.SessionID([]byte("token"))
	cases := []struct {
		name  string
		s     store.Session
		ttl   time.Duration
		field string
	}{
		{"a short id", store.Session{ID: []byte("short"), SecretTag: []byte("t")}, time.Hour, "session.id"},
		{"a key and a tag", store.Session{ID: id, KeyID: "k", SecretTag: []byte("t")}, time.Hour, "session.key_id"},
		{"neither key nor tag", store.Session{ID: id}, time.Hour, "session.key_id"},
		{"no ttl", store.Session{ID: id, SecretTag: []byte("t")}, 0, "session.ttl"},
		{"a ttl over the limit", store.Session{ID: id, SecretTag: []byte("t")}, store.MaxSessionTTL + time.Second, "session.ttl"},
	}
	for _, c := range cases {
		var ve *job.ValidationError
		if _, err := e.s.SessionCreate(t.Context(), c.s, c.ttl); !errors.As(err, &ve) || ve.Field != c.field {
			t.Fatalf("SessionCreate with %s: %v, want a ValidationError of %s", c.name, err, c.field)
		}
	}
	_, err := e.s.SessionGet(t.Context(), id)
	wantErr(t, "SessionGet after refused creates", err, job.ErrNotFound)
}
