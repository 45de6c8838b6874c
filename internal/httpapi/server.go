// Package httpapi serves jobd's HTTP API v1: job submission, reads, the
// updated-since feed, live progress (long-poll and Server-Sent Events),
// cancel and retry, queues, API keys, webhook subscriptions, the
// dataloader-compatible trigger and status routes, health, status and the
// OpenAPI document. Handlers speak to a store.Store (and the services of
// processes and webhooks) and contain no SQL; every error answer is an
// RFC 9457 problem document.
package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/internal/groupinsert"
	"github.com/jobd/jobd/internal/problem"
	"github.com/jobd/jobd/internal/remote"
	"github.com/jobd/jobd/internal/webhook"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/process"
	"github.com/jobd/jobd/schedule"
	"github.com/jobd/jobd/store"
)

// Defaults of Config.
const (
	DefaultMaxBodyBytes = 1 << 20
	DefaultPollInterval = 200 * time.Millisecond
	// MaxWait caps ?wait= on GET /api/v1/jobs/{id}.
	MaxWait = 60 * time.Second
)

// Config configures the API handler.
type Config struct {
	// Store is required.
	Store store.Store
	// Logger defaults to slog.Default(). It never sees a credential.
	Logger *slog.Logger
	// Clock defaults to clock.Real; it paces long-polls and streams and
	// measures uptime.
	Clock clock.Clock
	// Version is reported by /status.
	Version string
	// AdminSecret turns authentication on when not empty: every route but
	// /health and /openapi.json then needs "Authorization: Bearer" with
	// this secret (every scope) or an API key.
	AdminSecret string
	// MaxBodyBytes limits request bodies; default 1 MiB.
	MaxBodyBytes int64
	// MaxArgsBytes limits a job's args; default job.DefaultMaxArgsBytes.
	MaxArgsBytes int
	// WorkflowMaxTasks bounds the tasks of a workflow (POST
	// /api/v1/workflows); default job.DefaultWorkflowMaxTasks.
	WorkflowMaxTasks int
	// PollInterval is how often a long-poll or a stream re-reads its job;
	// default 200ms.
	PollInterval time.Duration
	// Remote applies the rules of the remote workers' protocol under the
	// engine's policy (their backoff, default timeouts, claim pacing and
	// wake-ups); jobd serve passes one over the engine. Nil makes one over
	// Store with the default policy (the default backoff, no timeout, no
	// pacing, no wake-ups: a long-polling claim claims again each second),
	// Clock, Logger and Observer's Jobs and Tracer.
	Remote *remote.Service
	// Async serves the async gateway's result routes (/api/v1/async/...)
	// once this API has checked their scope; it sees the request as it
	// came. Nil answers them 404.
	Async http.Handler
	// Processes runs the durable processes of /api/v1/processes/...; nil
	// answers them 404.
	Processes *process.Runner
	// Metrics serves GET /metrics (the Prometheus text format), which
	// needs the metrics scope (or admin) when authentication is on; nil
	// answers it 404.
	Metrics http.Handler
	// MetricsPublic serves /metrics without a credential even when
	// authentication is on (a scraper on a trusted network).
	MetricsPublic bool
	// Observer records what the API does, for metrics and traces.
	Observer Observer
	// Schedules applies the rules of schedules (/api/v1/schedules/...);
	// nil makes one over Store, with Clock, Logger and MaxArgsBytes.
	Schedules *schedule.Scheduler
	// Webhooks serves /api/v1/webhooks (the operators' subscriptions to
	// alerts); nil answers them 404.
	Webhooks *webhook.Service
	// Streams bounds the job event streams (StreamLimits); give the API's
	// Config and NewJobStream's the same one, so that their streams count
	// against the same caps. Nil makes one with the default limits.
	Streams *Streams
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = clock.Real
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.WorkflowMaxTasks == 0 {
		c.WorkflowMaxTasks = job.DefaultWorkflowMaxTasks
	}
	c.Observer = c.Observer.withDefaults()
	if c.Streams == nil {
		c.Streams, _ = NewStreams(StreamLimits{}) // the defaults are valid
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Store == nil:
		return errors.New("httpapi: Config.Store is required")
	case c.MaxBodyBytes < 0:
		return fmt.Errorf("httpapi: Config.MaxBodyBytes must be >= 0, got %d", c.MaxBodyBytes)
	case c.MaxArgsBytes < 0:
		return fmt.Errorf("httpapi: Config.MaxArgsBytes must be >= 0, got %d", c.MaxArgsBytes)
	case c.WorkflowMaxTasks < 0:
		return fmt.Errorf("httpapi: Config.WorkflowMaxTasks must be >= 0, got %d", c.WorkflowMaxTasks)
	case c.PollInterval < 0:
		return fmt.Errorf("httpapi: Config.PollInterval must be >= 0, got %s", c.PollInterval)
	}
	return nil
}

// server holds the handlers' shared dependencies.
type server struct {
	cfg     Config
	store   store.Store
	log     *slog.Logger
	clock   clock.Clock
	started time.Time
	auth    *authenticator
	obs     Observer
	// remote holds the rules of the remote workers' protocol.
	remote *remote.Service
	// schedules holds the rules of schedules.
	schedules *schedule.Scheduler
	// inserts commits concurrent single-job submissions together.
	inserts *groupinsert.Inserter
	// streams counts the open job event streams.
	streams *Streams
	// listPartBytes and listBuffer bound a page of GET /api/v1/jobs in
	// memory (list_page.go's constants; the tests make them small).
	listPartBytes, listBuffer int
}

// New returns the API handler.
func New(cfg Config) (http.Handler, error) {
	s, err := newServer(cfg)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	for _, rt := range s.routes() {
		mux.Handle(rt.pattern(), s.wrap(rt))
	}
	return &root{mux: mux, s: s}, nil
}

// NewJobStream returns the handler of a job's event stream, exactly as
// GET /api/v1/jobs/{id}/stream serves it but without its credential
// check: for a front end that checked its own (the dashboard's session).
// The request's path value "id" names the job; WithStreamCaller tells it
// who the caller is and how to recheck that the caller may still read
// (without it, the stream counts under the client's address and is
// never rechecked).
func NewJobStream(cfg Config) (http.Handler, error) {
	s, err := newServer(cfg)
	if err != nil {
		return nil, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.stream(w, r); err != nil {
			s.writeError(w, r, err)
		}
	}), nil
}

func newServer(cfg Config) (*server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &server{
		cfg:           cfg,
		store:         cfg.Store,
		log:           cfg.Logger,
		clock:         cfg.Clock,
		started:       cfg.Clock.Now(),
		auth:          newAuthenticator(cfg.Store, cfg.AdminSecret),
		obs:           cfg.Observer,
		inserts:       groupinsert.New(cfg.Store, 0, 0),
		streams:       cfg.Streams,
		listPartBytes: listPartBytes, listBuffer: listBuffer,
	}
	s.remote = cfg.Remote
	if s.remote == nil {
		var err error
		s.remote, err = remote.New(remote.Config{Store: cfg.Store, Policy: defaultPolicy{}, Clock: cfg.Clock,
			Logger: cfg.Logger, Jobs: cfg.Observer.Jobs, Tracer: cfg.Observer.Tracer})
		if err != nil {
			return nil, err
		}
	}
	s.schedules = cfg.Schedules
	if s.schedules == nil {
		var err error
		s.schedules, err = schedule.New(schedule.Config{Store: cfg.Store, Clock: cfg.Clock, Logger: cfg.Logger, MaxArgsBytes: cfg.MaxArgsBytes})
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}

// route is one endpoint: its method and path, the scope it needs ("" for
// a public route) and its handler, which returns an error to be answered
// as a problem.
type route struct {
	method, path string
	scope        scope
	handle       func(w http.ResponseWriter, r *http.Request) error
}

func (rt route) pattern() string { return rt.method + " " + rt.path }

// routes is the API's route table. The OpenAPI test holds openapi.json to
// exactly these.
func (s *server) routes() []route {
	return []route{
		{"GET", "/health", "", s.health},
		{"GET", "/status", scopeRead, s.status},
		{"GET", "/openapi.json", "", s.openAPI},
		{"GET", "/metrics", s.metricsScope(), s.metrics},

		{"POST", "/api/v1/jobs", scopeSubmit, s.submit},
		{"POST", "/api/v1/jobs/batch", scopeSubmit, s.submitBatch},
		{"GET", "/api/v1/jobs", scopeRead, s.list},
		{"GET", "/api/v1/jobs/{id}", scopeRead, s.getJob},
		{"POST", "/api/v1/jobs/{id}/cancel", scopeCancel, s.cancel},
		{"POST", "/api/v1/jobs/{id}/signal", scopeCancel, s.signal},
		{"POST", "/api/v1/jobs/{id}/retry", scopeAdmin, s.retry},
		{"POST", "/api/v1/jobs/{id}/rerun", scopeAdmin, s.rerun},
		{"GET", "/api/v1/jobs/{id}/events", scopeRead, s.events},
		{"GET", "/api/v1/jobs/{id}/stream", scopeRead, s.stream},

		{"POST", "/api/v1/workflows", scopeSubmit, s.submitWorkflow},
		{"GET", "/api/v1/workflows", scopeRead, s.listWorkflows},
		{"GET", "/api/v1/workflows/{id}", scopeRead, s.getWorkflow},
		{"POST", "/api/v1/workflows/{id}/cancel", scopeCancel, s.cancelWorkflow},
		{"POST", "/api/v1/workflows/{id}/retry", scopeAdmin, s.retryWorkflow},

		{"POST", "/api/v1/jobs/trigger", scopeSubmit, s.trigger},
		{"GET", "/api/v1/jobs/{id}/status", scopeRead, s.jobStatus},

		{"GET", "/api/v1/queues", scopeRead, s.queues},
		{"POST", "/api/v1/queues/{name}/pause", scopeAdmin, s.pauseQueue},
		{"POST", "/api/v1/queues/{name}/resume", scopeAdmin, s.resumeQueue},
		{"PUT", "/api/v1/queues/{name}", scopeAdmin, s.putQueue},

		{"GET", "/api/v1/schedules", scopeRead, s.listSchedules},
		{"GET", "/api/v1/schedules/{name}", scopeRead, s.getSchedule},
		{"PUT", "/api/v1/schedules/{name}", scopeAdmin, s.putSchedule},
		{"DELETE", "/api/v1/schedules/{name}", scopeAdmin, s.deleteSchedule},
		{"POST", "/api/v1/schedules/{name}/pause", scopeAdmin, s.pauseSchedule},
		{"POST", "/api/v1/schedules/{name}/resume", scopeAdmin, s.resumeSchedule},
		{"POST", "/api/v1/schedules/{name}/trigger", scopeAdmin, s.triggerSchedule},

		{"POST", "/api/v1/workers", scopeAdmin, s.createWorker},
		{"GET", "/api/v1/workers", scopeAdmin, s.listWorkers},
		{"POST", "/api/v1/workers/{id}/disable", scopeAdmin, s.disableWorker},
		{"POST", "/api/v1/workers/{id}/enable", scopeAdmin, s.enableWorker},
		{"DELETE", "/api/v1/workers/{id}", scopeAdmin, s.deleteWorker},

		{"POST", "/api/v1/worker/heartbeat", scopeWorker, s.workerHeartbeat},
		{"POST", "/api/v1/worker/claim", scopeWorker, s.workerClaim},
		{"POST", "/api/v1/worker/jobs/{id}/progress", scopeWorker, s.workerProgress},
		{"POST", "/api/v1/worker/jobs/{id}/checkpoint", scopeWorker, s.workerCheckpoint},
		{"POST", "/api/v1/worker/jobs/{id}/complete", scopeWorker, s.workerComplete},
		{"POST", "/api/v1/worker/jobs/{id}/fail", scopeWorker, s.workerFail},
		{"POST", "/api/v1/worker/jobs/{id}/release", scopeWorker, s.workerRelease},
		{"POST", "/api/v1/worker/jobs/{id}/steps", scopeWorker, s.workerStep},
		{"POST", "/api/v1/worker/jobs/{id}/children", scopeWorker, s.workerChildren},
		{"POST", "/api/v1/worker/jobs/{id}/wait", scopeWorker, s.workerWait},
		{"POST", "/api/v1/worker/outcomes", scopeWorker, s.workerOutcomes},

		{"POST", "/api/v1/processes/{ns}/{id}", scopeSubmit, s.initProcess},
		{"POST", "/api/v1/processes/{ns}/{id}/call", scopeSubmit, s.callProcess},
		{"POST", "/api/v1/processes/{ns}/{id}/repair", scopeSubmit, s.repairProcess},
		{"GET", "/api/v1/processes/{ns}/{id}", scopeRead, s.getProcess},
		{"DELETE", "/api/v1/processes/{ns}/{id}", scopeAdmin, s.deleteProcess},
		{"GET", "/api/v1/processes/{ns}", scopeRead, s.listProcesses},

		{"POST", "/api/v1/webhooks", scopeAdmin, s.createWebhook},
		{"GET", "/api/v1/webhooks", scopeAdmin, s.listWebhooks},
		{"GET", "/api/v1/webhooks/{id}", scopeAdmin, s.getWebhook},
		{"PUT", "/api/v1/webhooks/{id}", scopeAdmin, s.updateWebhook},
		{"DELETE", "/api/v1/webhooks/{id}", scopeAdmin, s.deleteWebhook},
		{"POST", "/api/v1/webhooks/{id}/test", scopeAdmin, s.testWebhook},

		{"POST", "/api/v1/keys", scopeAdmin, s.createKey},
		{"GET", "/api/v1/keys", scopeAdmin, s.listKeys},
		{"DELETE", "/api/v1/keys/{id}", scopeAdmin, s.revokeKey},

		// The async gateway's results, served by Config.Async. The
		// "/api/v1/async/" subtrees take the bare collection path (400)
		// and whatever no route below matches (404).
		{"GET", "/api/v1/async/", scopeRead, s.async},
		{"PUT", "/api/v1/async/", scopeRead, s.async},
		{"DELETE", "/api/v1/async/", scopeAdmin, s.async},
		{"GET", "/api/v1/async/done", scopeRead, s.async},
		{"GET", "/api/v1/async/pending", scopeRead, s.async},
		{"GET", "/api/v1/async/{id}", scopeRead, s.async},
		{"PUT", "/api/v1/async/{id}", scopeRead, s.async},
		{"PUT", "/api/v1/async/{id}/cancel", scopeAdmin, s.async},
		{"DELETE", "/api/v1/async/all", scopeAdmin, s.async},
		{"DELETE", "/api/v1/async/expired", scopeAdmin, s.async},
		{"DELETE", "/api/v1/async/{id}", scopeAdmin, s.async},
	}
}

// metricsScope is the scope /metrics needs: metrics, or none when it is
// public.
func (s *server) metricsScope() scope {
	if s.cfg.MetricsPublic {
		return ""
	}
	return scopeMetrics
}

// metrics: GET /metrics, served by Config.Metrics.
func (s *server) metrics(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Metrics == nil {
		return problem.Errorf(api.ProblemNotFound, "", "metrics are not served by this handler")
	}
	s.cfg.Metrics.ServeHTTP(w, r)
	return nil
}

// async hands an async-result route, its scope checked, to Config.Async.
func (s *server) async(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Async == nil {
		return problem.Errorf(api.ProblemNotFound, "", "the async gateway is not configured on this server (jobd serve --upstream NAME=URL)")
	}
	s.cfg.Async.ServeHTTP(w, r)
	return nil
}

// Authorizer checks credentials the way the API does, for routes served
// outside this package (the async gateway's /gw/ and /_api/job/ routes).
type Authorizer struct{ a *authenticator }

// NewAuthorizer returns an Authorizer over st's API keys and adminSecret;
// with an empty secret every request passes.
func NewAuthorizer(st store.Store, adminSecret string) *Authorizer {
	return &Authorizer{a: newAuthenticator(st, adminSecret)}
}

// Authorize returns nil when r's credential grants need (api.ScopeSubmit,
// api.ScopeRead or api.ScopeAdmin; the admin secret and admin keys grant
// every scope). A missing or bad credential is an *api.Problem of status
// 401, a key without the scope one of status 403; any other error is the
// store's, wrapped. A key limited to queues is refused (403 naming
// queues): the routes served outside this package are not one queue's.
func (a *Authorizer) Authorize(r *http.Request, need string) error {
	caller, err := a.a.authorize(r, scope(need))
	if err == nil && caller.Limited() {
		err = errQueueLimited
	}
	var p *problem.Error
	if errors.As(err, &p) {
		return problem.FromError(p)
	}
	return err
}

// Open reports whether authentication is off (no admin secret): every
// request passes.
func (a *Authorizer) Open() bool { return a.a.open }

// Identify returns the principal of a credential, as the API reads it
// from "Authorization: Bearer": the admin secret or an API key that
// exists. ok is false when cred is neither; err is the store's failure.
func (a *Authorizer) Identify(ctx context.Context, cred string) (p Principal, ok bool, err error) {
	if a.a.open {
		return Principal{}, false, nil
	}
	return a.a.identify(ctx, cred)
}

// Key returns the principal of the API key whose public prefix is
// prefix, if it still exists (a revoked key does not); ok is false
// otherwise. It checks no secret: it is for a session that checked the
// key's secret when it began.
func (a *Authorizer) Key(ctx context.Context, prefix string) (p Principal, ok bool, err error) {
	rec, err := a.a.keys.find(ctx, prefix)
	if errors.Is(err, job.ErrNotFound) {
		return Principal{}, false, nil
	}
	if err != nil {
		return Principal{}, false, fmt.Errorf("look up API key: %w", err)
	}
	return principalOf(rec), true, nil
}

// KeyPrincipal returns the principal of an API key record, as Key does
// once it has found the record: for a session that reads its key with
// its own lookup (the dashboard's, store.SessionGet).
func KeyPrincipal(rec *store.APIKey) Principal { return principalOf(rec) }

// wrap checks the route's scope before anything else (so that no answer
// reveals whether a job exists to a caller without it), then runs the
// handler and answers its error as a problem.
func (s *server) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rt.scope == scopeWorker {
			// A worker route acts as one worker: its key names it.
			var err error
			if r, err = s.auth.workerOf(r); err != nil {
				s.writeError(w, r, err)
				return
			}
		} else if rt.scope != "" {
			p, err := s.auth.authorize(r, rt.scope)
			if err == nil && p.Limited() && !rt.queueScoped() {
				err = errQueueLimited
			}
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			r = withPrincipal(r, p)
		}
		if err := rt.handle(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// root refuses a browser's request from a page of another site
// (CrossSite), answers requests no route matches with a problem document
// (404 or 405) instead of the mux's plain text, and recovers handler
// panics.
type root struct {
	mux *http.ServeMux
	s   *server
}

func (h *root) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rw := &responseWriter{ResponseWriter: w}
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			h.s.log.Error("http handler panic", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
			if !rw.wrote {
				problem.Write(rw, problem.New(api.ProblemInternal, "", "internal server error"))
			}
		}
	}()
	if CrossSite(r, false) {
		h.s.writeError(rw, r, errCrossSite)
		return
	}
	if handler, pattern := h.mux.Handler(r); pattern == "" {
		r.Pattern = "" // no route of ours served it, whatever an outer mux said
		h.unmatched(rw, r, handler)
		return
	}
	h.mux.ServeHTTP(rw, r) // sets the path values
}

// unmatched runs the mux's own 404/405 handler into a recorder to learn
// its status and Allow header, and answers a problem instead. The mux's
// redirects (of unclean paths) are kept.
func (h *root) unmatched(w http.ResponseWriter, r *http.Request, handler http.Handler) {
	rec := &statusRecorder{header: http.Header{}}
	handler.ServeHTTP(rec, r)
	switch rec.code {
	case http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		handler.ServeHTTP(w, r)
		return
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", rec.header.Get("Allow"))
		problem.Write(w, problem.New(api.ProblemMethodNotAllowed, "", fmt.Sprintf("%s is not allowed on %s", r.Method, r.URL.Path)))
		return
	}
	problem.Write(w, problem.New(api.ProblemNotFound, "", fmt.Sprintf("no route %s %s", r.Method, r.URL.Path)))
}

// responseWriter remembers whether the answer has started.
type responseWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *responseWriter) WriteHeader(code int) {
	w.wrote = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (Flush).
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type statusRecorder struct {
	header http.Header
	code   int
}

func (r *statusRecorder) Header() http.Header { return r.header }
func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}
func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return len(b), nil
}
