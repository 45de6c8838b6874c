package store

import (
	"context"
	"crypto/sha256"
	"time"

	"github.com/jobd/jobd/job"
)

// SessionStore holds the dashboard's login sessions (package web), so that
// every node sharing the database knows them and a logout ends a session
// everywhere at once.
//
// A session's cookie holds a random token; the database holds only its
// SHA-256 (Session.ID), so that a reader of the database cannot take over
// a session. A session is the admin secret's (KeyID "") or an API key's:
// the key's is found with its key, in the same query, and ends when the
// key is revoked.
type SessionStore interface {
	// SessionCreate stores s, created now and expiring after ttl, and
	// returns it with those times; the sessions expired by now are
	// deleted in the same transaction. job.ErrDuplicate when its id is
	// taken; a validation error when s or ttl is not well formed
	// (CheckSession).
	SessionCreate(ctx context.Context, s Session, ttl time.Duration) (*Session, error)
	// SessionGet returns the session of id, with its API key (Key, nil
	// for the admin secret's), in one query: job.ErrNotFound when there
	// is none, it has expired (ExpiresAt <= now), or its key was revoked.
	SessionGet(ctx context.Context, id []byte) (*Session, error)
	// SessionDelete deletes the session of id (a logout); job.ErrNotFound
	// when there is none.
	SessionDelete(ctx context.Context, id []byte) error
}

// Session is a login to the dashboard.
type Session struct {
	// ID is the SHA-256 of the session's token (SessionID).
	ID []byte
	// KeyID is the API key the session began with; "" for the admin
	// secret.
	KeyID string
	// SecretTag binds an admin secret's session to that secret (the
	// dashboard's HMAC of the token under a key derived from it): a node
	// whose secret differs refuses the session. Nil for a key's session.
	SecretTag []byte
	CreatedAt time.Time
	ExpiresAt time.Time
	// Key is the session's API key as SessionGet found it; nil for the
	// admin secret's session (and in SessionCreate's answer).
	Key *APIKey
}

// SessionID is the id a session of token is stored under: its SHA-256.
func SessionID(token []byte) []byte {
	sum := sha256.Sum256(token)
	return sum[:]
}

// MaxSessionTTL bounds a session's life.
const MaxSessionTTL = 366 * 24 * time.Hour

// CheckSession refuses a session without a 32-byte id, with both or
// neither of a key and a secret tag, or with a ttl that is not positive
// or over MaxSessionTTL.
func CheckSession(s Session, ttl time.Duration) error {
	switch {
	case len(s.ID) != sha256.Size:
		return job.Invalid("session.id", "must be a SHA-256 (32 bytes), got %d bytes", len(s.ID))
	case (s.KeyID == "") == (len(s.SecretTag) == 0):
		return job.Invalid("session.key_id", "a session is the admin secret's (a secret tag, no key) or a key's (a key, no tag)")
	case ttl <= 0 || ttl > MaxSessionTTL:
		return job.Invalid("session.ttl", "must be positive and at most %s, got %s", MaxSessionTTL, ttl)
	}
	return nil
}
