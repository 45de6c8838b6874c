package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/problem"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// scope is a permission an API key can hold.
type scope string

// The scopes, in the order they are listed to callers.
const (
	scopeSubmit scope = api.ScopeSubmit
	scopeRead   scope = api.ScopeRead
	// scopeCancel cancels jobs: the jobs of the key's queues when it is
	// limited to queues (callerJob). A route that acts on a job as
	// cancel does (issue 29's signal) needs it too and reads its job
	// with callerJob.
	scopeCancel scope = api.ScopeCancel
	scopeAdmin  scope = api.ScopeAdmin
	// scopeWorker is held by remote workers' keys only, which carry no
	// other scope; the worker routes check the key's worker (workerOf).
	scopeWorker scope = api.ScopeWorker
	// scopeMetrics is a scraper's: GET /metrics.
	scopeMetrics scope = api.ScopeMetrics
)

// scopes is the table of scopes a key may be given. Adding one (the
// remote-worker issue adds "worker") is one line here plus its routes.
var scopes = []scope{scopeSubmit, scopeRead, scopeCancel, scopeAdmin, scopeMetrics}

// queueScopes are the scopes a key limited to queues may hold: those of
// the routes that act on one queue's jobs (queueRoutes). Admin means
// every route, and metrics shows every queue's figures.
var queueScopes = []scope{scopeSubmit, scopeRead, scopeCancel}

func knownScope(name string) bool { return slices.Contains(scopes, scope(name)) }

// Key format: "jobd_<prefix>_<secret>". The prefix is public and finds the
// record; the secret carries 256 bits from crypto/rand. Only the SHA-256 of
// the whole key is stored.
const (
	keyTag         = "jobd"
	keyPrefixBytes = 6  // 12 hex characters
	keySecretBytes = 32 // 256 bits
)

// newKey returns a fresh key and its public prefix.
func newKey() (key, prefix string, err error) {
	b := make([]byte, keyPrefixBytes+keySecretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("random key: %w", err)
	}
	prefix = hex.EncodeToString(b[:keyPrefixBytes])
	return keyTag + "_" + prefix + "_" + hex.EncodeToString(b[keyPrefixBytes:]), prefix, nil
}

// splitKey returns the prefix of a well-formed key.
func splitKey(key string) (prefix string, ok bool) {
	parts := strings.Split(key, "_")
	if len(parts) != 3 || parts[0] != keyTag ||
		len(parts[1]) != 2*keyPrefixBytes || len(parts[2]) != 2*keySecretBytes {
		return "", false
	}
	return parts[1], true
}

func hashKey(key string) []byte {
	sum := sha256.Sum256([]byte(key))
	return sum[:]
}

// authenticator checks the bearer credential of a request. With no admin
// secret the API is open.
type authenticator struct {
	store      store.Store
	keys       *keyLookups
	open       bool
	secretHash []byte
}

func newAuthenticator(s store.Store, adminSecret string) *authenticator {
	a := &authenticator{store: s, keys: newKeyLookups(s), open: adminSecret == ""}
	if !a.open {
		a.secretHash = hashKey(adminSecret)
	}
	return a
}

// errUnauthorized is the one answer to every missing, malformed, unknown
// or revoked credential: it never says which, nor echoes the credential.
var errUnauthorized = problem.Errorf(api.ProblemUnauthorized, "", "a valid credential is required: Authorization: Bearer <admin secret or API key>")

// authorize returns the principal of r's credential when it grants need,
// a 401 problem when there is no valid credential and a 403 problem when
// a valid key lacks the scope. On an open server (no admin secret) every
// request is the open principal, which holds every scope.
func (a *authenticator) authorize(r *http.Request, need scope) (Principal, error) {
	if a.open {
		return Principal{Admin: true, Open: true}, nil
	}
	cred, ok := bearer(r)
	if !ok {
		return Principal{}, errUnauthorized
	}
	p, ok, err := a.identify(r.Context(), cred)
	switch {
	case err != nil:
		return Principal{}, err
	case !ok:
		return Principal{}, errUnauthorized
	case !p.Grants(string(need)):
		return Principal{}, problem.Errorf(api.ProblemForbidden, "", "this API key lacks the %q scope", need)
	}
	return p, nil
}

// identify returns the principal cred names: the admin secret, or an API
// key that exists (revoked keys do not). ok is false for anything else;
// err is the store's failure.
func (a *authenticator) identify(ctx context.Context, cred string) (p Principal, ok bool, err error) {
	// Both sides are hashed first, so the comparison takes the same time
	// whatever the length of the guess.
	if subtle.ConstantTimeCompare(hashKey(cred), a.secretHash) == 1 {
		return Principal{Admin: true}, true, nil
	}
	prefix, ok := splitKey(cred)
	if !ok {
		return Principal{}, false, nil
	}
	rec, err := a.keys.find(ctx, prefix)
	if errors.Is(err, job.ErrNotFound) {
		return Principal{}, false, nil
	}
	if err != nil {
		return Principal{}, false, fmt.Errorf("look up API key: %w", err)
	}
	if subtle.ConstantTimeCompare(hashKey(cred), rec.Hash) != 1 {
		return Principal{}, false, nil
	}
	return principalOf(rec), true, nil
}

func principalOf(rec *store.APIKey) Principal {
	return Principal{
		KeyID: rec.ID, Prefix: rec.Prefix, Scopes: slices.Clone(rec.Scopes), WorkerID: rec.WorkerID,
		Queues: slices.Clone(rec.Queues),
	}
}

// Principal is who a credential names: the admin secret (every scope) or
// an API key.
type Principal struct {
	// Admin is true for the admin secret, and for every request of an
	// open server (no admin secret), which Open then marks.
	Admin, Open bool
	// KeyID and Prefix name the API key; Scopes are its scopes, WorkerID
	// its remote worker, if any.
	KeyID, Prefix, WorkerID string
	Scopes                  []string
	// Queues are the queues the key is limited to (empty: every queue):
	// it may use only the routes of one queue's jobs, and only for the
	// jobs of these queues.
	Queues job.QueuePatterns
}

// Limited reports whether p is a key limited to queues.
func (p Principal) Limited() bool { return p.Queues.Limited() }

// Allows reports whether p may see and touch the jobs of queue: always,
// unless p is limited to other queues.
func (p Principal) Allows(queue string) bool { return p.Queues.Allows(queue) }

// Grants reports whether p holds the scope need (api.ScopeRead…): the
// admin secret and keys of scope admin hold every one.
func (p Principal) Grants(need string) bool {
	return p.Admin || slices.Contains(p.Scopes, need) || slices.Contains(p.Scopes, string(scopeAdmin))
}

// bearer returns the credential of an "Authorization: Bearer" header.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, cred, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	cred = strings.TrimSpace(cred)
	return cred, cred != ""
}

type principalKey struct{}

// withPrincipal returns r with p in its context, for the handler to read
// with principalOf.
func withPrincipal(r *http.Request, p Principal) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
}

// callerOf is the principal the route's scope check found; the zero
// Principal (no scope) for a public route or a worker route.
func callerOf(r *http.Request) Principal {
	p, _ := r.Context().Value(principalKey{}).(Principal)
	return p
}
