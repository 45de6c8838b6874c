// Package gateway makes any slow HTTP endpoint asynchronous, durably: the
// ArangoDB async-job contract (x-arango-async, /_api/job) in front of any
// upstream service, with queued requests and stored responses kept in the
// jobd database, so that a restart loses nothing.
//
// A request to /gw/NAME/... is forwarded to the upstream NAME. Without an
// async header it is proxied at once and its answer returned as is. With
// "X-Async: true" (or x-arango-async) it becomes a job of queue Queue and
// kind KindForget, answered 202 at once; with "X-Async: store" it becomes
// one of kind Kind, and the answer also carries the job's id in X-Async-Id, and the upstream's response is kept
// until it is fetched (PUT /api/v1/async/{id}, once), deleted, or older
// than the result TTL. The engine's worker pool for Queue performs the
// upstream calls: 5xx answers and connection errors are retried with the
// queue's backoff, a 4xx is a final answer, and a 429 or 503 with a
// Retry-After throttles its upstream (the jobs' partition) for that long.
package gateway

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/observe"
	"github.com/jobd/jobd/store"
)

// The queue and kinds of the gateway's jobs: Kind for the requests whose
// response is kept (X-Async: store), KindForget for fire-and-forget ones
// (X-Async: true), which the result routes never list nor return.
const (
	Queue      = "gateway"
	Kind       = "gateway.request"
	KindForget = job.ReservedPrefix + "gateway.forget"
)

// Defaults of Config.
const (
	DefaultMaxPending       = 10000
	DefaultResultTTL        = 7 * 24 * time.Hour
	DefaultTimeout          = time.Hour
	DefaultMaxResponseBytes = 16 << 20
	DefaultSweepInterval    = time.Minute
	// DefaultConcurrency is the worker pool a server gives Queue unless
	// configured otherwise.
	DefaultConcurrency = 16
)

// Authorizer checks a request's credential for a scope (api.ScopeSubmit,
// api.ScopeRead, api.ScopeAdmin); *httpapi.Authorizer is one. It returns
// nil when the credential grants the scope, an *api.Problem (401, 403) to
// answer as is, or another error.
type Authorizer interface {
	Authorize(r *http.Request, scope string) error
}

// Config configures a Gateway. Zero fields take the documented defaults.
type Config struct {
	// Store is the database. Required.
	Store store.Store
	// Engine runs the upstream calls: New registers Kind on it. It needs
	// a worker pool for Queue (see DefaultConcurrency). Required.
	Engine *engine.Engine
	// Upstreams are the services of /gw/NAME/. At least one.
	Upstreams []Upstream
	// Authorizer is set when authentication is on: every route then
	// checks it before anything else, and the caller's Authorization
	// header (jobd's own credential) is never forwarded. Nil: open, and
	// Authorization is the upstream's and forwarded.
	Authorizer Authorizer
	// Logger defaults to slog.Default(). It never sees header values,
	// bodies, query strings or the upstreams' user information.
	Logger *slog.Logger
	// Clock defaults to clock.Real; it ages stored results.
	Clock clock.Clock
	// MaxPending is how many gateway jobs may be queued or running before
	// an async request is refused with 503. Default 10 000.
	MaxPending int
	// ResultTTL is how long a finished request's result is kept unfetched.
	// Default 7 days (the engine's own retention may remove it sooner).
	ResultTTL time.Duration
	// Timeout bounds each upstream call of an upstream that sets none.
	// Default 1 hour.
	Timeout time.Duration
	// MaxResponseBytes caps a stored response body: a larger one fails the
	// job at once, without retries. Default 16 MiB.
	MaxResponseBytes int64
	// MaxArgsBytes is the store's limit on a job's args, which hold the
	// queued request; default job.DefaultMaxArgsBytes. A request body
	// that cannot fit is refused with 413.
	MaxArgsBytes int
	// MaxAttempts of each gateway job; default job.DefaultMaxAttempts.
	MaxAttempts int
	// SweepInterval is the gap between two removals of expired results by
	// the maintenance leader. Default 1 minute.
	SweepInterval time.Duration
	// Transport makes the upstream calls; default a clone of
	// http.DefaultTransport.
	Transport http.RoundTripper
	// Observer records the upstream calls; default observe.Nop.
	Observer observe.Gateway
	// Tracer propagates an async request's execution span to its
	// upstream (traceparent); default observe.Nop.
	Tracer observe.Tracer
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = clock.Real
	}
	if c.MaxPending == 0 {
		c.MaxPending = DefaultMaxPending
	}
	if c.ResultTTL == 0 {
		c.ResultTTL = DefaultResultTTL
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxResponseBytes == 0 {
		c.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if c.MaxArgsBytes == 0 {
		c.MaxArgsBytes = job.DefaultMaxArgsBytes
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = job.DefaultMaxAttempts
	}
	if c.SweepInterval == 0 {
		c.SweepInterval = DefaultSweepInterval
	}
	if c.Transport == nil {
		c.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	if c.Observer == nil {
		c.Observer = observe.Nop{}
	}
	if c.Tracer == nil {
		c.Tracer = observe.Nop{}
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Store == nil:
		return errors.New("gateway: Config.Store is required")
	case c.Engine == nil:
		return errors.New("gateway: Config.Engine is required")
	case len(c.Upstreams) == 0:
		return errors.New("gateway: at least one upstream is required")
	case c.MaxPending < 0, c.ResultTTL < 0, c.Timeout < 0, c.MaxResponseBytes < 0,
		c.MaxArgsBytes < 0, c.MaxAttempts < 0, c.SweepInterval < 0:
		return errors.New("gateway: Config limits and durations must not be negative")
	case c.MaxAttempts > job.MaxMaxAttempts:
		return fmt.Errorf("gateway: Config.MaxAttempts must be at most %d", job.MaxMaxAttempts)
	}
	seen := map[string]bool{}
	for _, u := range c.Upstreams {
		if err := checkUpstreamName(u.Name); err != nil {
			return fmt.Errorf("gateway: %w", err)
		}
		if u.URL == nil || (u.URL.Scheme != "http" && u.URL.Scheme != "https") || u.URL.Host == "" {
			return fmt.Errorf("gateway: upstream %q needs an http:// or https:// URL", u.Name)
		}
		if u.Timeout < 0 {
			return fmt.Errorf("gateway: upstream %q: negative timeout", u.Name)
		}
		if seen[u.Name] {
			return fmt.Errorf("gateway: upstream %q is configured twice", u.Name)
		}
		seen[u.Name] = true
	}
	return nil
}

// Gateway is the async HTTP gateway. Create it with New and mount Handler
// and Results; the engine's maintenance removes the expired results.
type Gateway struct {
	cfg       Config
	store     store.Store
	log       *slog.Logger
	clock     clock.Clock
	node      string
	upstreams map[string]*upstream
	client    *http.Client
	maxBody   int64 // request body limit of an async request
}

// upstream is a configured Upstream with its proxy for synchronous calls.
type upstream struct {
	Upstream
	proxy http.Handler
}

// New checks cfg, registers the Kind handler on cfg.Engine, adds the
// result TTL (DutyResultTTL, run by the maintenance leader) to its duties
// and returns the gateway. It must be called before the engine runs.
func New(cfg Config) (*Gateway, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	g := &Gateway{
		cfg:       cfg,
		store:     cfg.Store,
		log:       cfg.Logger,
		clock:     cfg.Clock,
		node:      cfg.Engine.Node(),
		upstreams: make(map[string]*upstream, len(cfg.Upstreams)),
		// Base64 makes the body 4/3 larger in the args; the rest of the
		// request (headers, path) must fit too, which the insert checks.
		maxBody: int64(cfg.MaxArgsBytes) / 4 * 3,
	}
	g.client = &http.Client{
		Transport: cfg.Transport,
		// A gateway answers what the upstream answered, redirects included.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	for _, u := range cfg.Upstreams {
		if u.Timeout == 0 {
			u.Timeout = cfg.Timeout
		}
		up := &upstream{Upstream: u}
		up.proxy = g.newProxy(up)
		g.upstreams[u.Name] = up
	}
	if err := cfg.Engine.AddDuty(g.ttlDuty()); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	engine.Register(cfg.Engine, Kind, g.perform)
	engine.Register(cfg.Engine, KindForget, g.perform)
	return g, nil
}

// ours reports whether j is a gateway request whose response is kept:
// the result routes know no other.
func ours(j *job.Job) bool { return j.Queue == Queue && j.Kind == Kind }
