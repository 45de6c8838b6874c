package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/problem"
	"github.com/jobd/jobd/job"
)

// Defaults of StreamLimits.
const (
	// DefaultMaxStreams: each open stream re-reads its job every
	// PollInterval (5 point reads a second at the default 200ms), so 256
	// streams are about 1 300 reads a second on the database, and 256
	// connections and goroutines on the node.
	DefaultMaxStreams = 256
	// DefaultMaxStreamsPerCaller lets one caller follow 32 jobs at once
	// (the Go client's Wait falls back to long-polling past it), so that
	// eight callers at least share a node's streams.
	DefaultMaxStreamsPerCaller = 32
	// DefaultStreamMaxAge ends a stream after 10 minutes: its client
	// reconnects and its credential is checked again in full.
	DefaultStreamMaxAge = 10 * time.Minute
	// DefaultStreamRecheck is how often an open stream checks that its
	// credential still holds.
	DefaultStreamRecheck = 5 * time.Second
)

// StreamLimits bound the event streams of a node. Zero fields take the
// defaults.
type StreamLimits struct {
	// MaxOpen caps the streams open at once; past it a stream request is
	// answered 429 too-many-requests with Retry-After.
	MaxOpen int
	// MaxPerCaller caps the streams of one caller: one API key, the admin
	// secret, or, on a server without credentials, one client address
	// (behind a proxy, the proxy's: then it caps them all). 429 past it.
	MaxPerCaller int
	// MaxAge ends a stream this long after it began: the last thing it
	// sends is a "retry:" field, and the client reconnects, with
	// Last-Event-ID (see GET /api/v1/jobs/{id}/stream).
	MaxAge time.Duration
	// Recheck is how often a stream checks that its credential still
	// holds (the key exists, its worker is enabled; the dashboard's
	// session): it ends within Recheck of a revocation.
	Recheck time.Duration
}

func (l StreamLimits) withDefaults() StreamLimits {
	if l.MaxOpen == 0 {
		l.MaxOpen = DefaultMaxStreams
	}
	if l.MaxPerCaller == 0 {
		l.MaxPerCaller = DefaultMaxStreamsPerCaller
	}
	if l.MaxAge == 0 {
		l.MaxAge = DefaultStreamMaxAge
	}
	if l.Recheck == 0 {
		l.Recheck = DefaultStreamRecheck
	}
	return l
}

// Streams counts the open event streams of a node against its
// StreamLimits. The API's job streams and the dashboard's (NewJobStream)
// count against the same caps when their Configs share one.
type Streams struct {
	limits StreamLimits

	mu       sync.Mutex
	open     int
	byCaller map[string]int
}

// NewStreams returns the counter of streams bound by limits; zero fields
// take the defaults, negative ones are an error.
func NewStreams(limits StreamLimits) (*Streams, error) {
	if limits.MaxOpen < 0 || limits.MaxPerCaller < 0 || limits.MaxAge < 0 || limits.Recheck < 0 {
		return nil, fmt.Errorf("httpapi: stream limits must be >= 0, got %+v", limits)
	}
	return &Streams{limits: limits.withDefaults(), byCaller: make(map[string]int)}, nil
}

// Limits returns the limits, defaults applied.
func (s *Streams) Limits() StreamLimits { return s.limits }

// Open returns the number of streams open now.
func (s *Streams) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open
}

// acquire takes a stream of caller, or answers why not: a 429 problem.
// release gives it back; it must be called once.
func (s *Streams) acquire(caller string) (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.open >= s.limits.MaxOpen:
		return nil, problem.Errorf(api.ProblemTooManyRequests, "",
			"this node has %d event streams open, its limit: retry later, or long-poll with GET /api/v1/jobs/{id}?wait=", s.open)
	case s.byCaller[caller] >= s.limits.MaxPerCaller:
		return nil, problem.Errorf(api.ProblemTooManyRequests, "",
			"this credential has %d event streams open on this node, its limit: close one, or long-poll with GET /api/v1/jobs/{id}?wait=", s.byCaller[caller])
	}
	s.open++
	s.byCaller[caller]++
	var once sync.Once
	return func() { once.Do(func() { s.release(caller) }) }, nil
}

func (s *Streams) release(caller string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.open--
	if s.byCaller[caller]--; s.byCaller[caller] <= 0 {
		delete(s.byCaller, caller)
	}
}

// streamCaller is who opened a stream: the name its streams are counted
// under, and how to check that it still may read (nil: it always may).
type streamCaller struct {
	id    string
	check func(ctx context.Context) (bool, error)
}

type streamCallerKey struct{}

// WithStreamCaller returns r for a stream served by NewJobStream, which
// checks no credential of its own, telling it who opened it: id names
// the caller its streams are counted under (StreamLimits.MaxPerCaller;
// CallerID gives the API's names), and check, run every
// StreamLimits.Recheck, says whether the caller may still read: the
// stream ends when it says no (the session was revoked) or fails.
func WithStreamCaller(r *http.Request, id string, check func(ctx context.Context) (bool, error)) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), streamCallerKey{}, streamCaller{id: id, check: check}))
}

// CallerID is the name the streams of p are counted under: its API key,
// the admin secret, or, for the open principal of a server without
// credentials (or no principal), the client's address (r's RemoteAddr
// without its port).
func CallerID(p Principal, r *http.Request) string {
	switch {
	case p.KeyID != "":
		return "key:" + p.KeyID
	case p.Admin && !p.Open:
		return "admin"
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "addr:" + host
}

// streamCallerOf is the caller of a stream request: the one
// WithStreamCaller named, or the principal the route's scope check
// found, whose key is checked again through the store.
func (s *server) streamCallerOf(r *http.Request) streamCaller {
	if c, ok := r.Context().Value(streamCallerKey{}).(streamCaller); ok {
		return c
	}
	p := callerOf(r)
	c := streamCaller{id: CallerID(p, r)}
	if !p.Admin && p.KeyID != "" {
		c.check = func(ctx context.Context) (bool, error) { return s.auth.stillHolds(ctx, p, scopeRead) }
	}
	return c
}

// stillHolds reports whether the key of p still exists (revoked keys do
// not), still grants need and, for a worker's key, its worker is still
// there and enabled. It reads the store every time (keyLookups shares
// a lookup, never caches one).
func (a *authenticator) stillHolds(ctx context.Context, p Principal, need scope) (bool, error) {
	rec, err := a.keys.find(ctx, p.Prefix)
	if errors.Is(err, job.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("look up API key: %w", err)
	}
	now := principalOf(rec)
	if rec.ID != p.KeyID || !now.Grants(string(need)) {
		return false, nil
	}
	if rec.WorkerID == "" {
		return true, nil
	}
	// The key's lookup read its worker too (store.APIKey.Worker).
	return rec.Worker != nil && !rec.Worker.Disabled, nil
}
