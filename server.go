// Package jobd is jobd's composition root: NewServer builds everything
// `jobd serve` runs — the store, the engine and its maintenance duties,
// schedules, webhooks, the HTTP API, the async gateway, durable
// processes, the dashboard and telemetry — from one Config, and Run
// serves until its context ends. The CLI only parses flags into a
// Config; tests and embedders that want the whole server call NewServer
// too. A program that only wants to run jobs in its own process uses
// package engine over a store (store/sqlite, store/postgres) instead.
//
//	srv, err := jobd.NewServer(ctx, jobd.Config{
//		Database: "postgres://jobd@db/jobd",
//		Listen:   "127.0.0.1:8080",
//		Engine:   engine.Config{Queues: []engine.QueueConfig{{Queue: "default", Concurrency: 4}}},
//	})
//	if err != nil { … }
//	defer srv.Close()
//	err = srv.Run(ctx) // until ctx ends, then a graceful stop
package jobd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/engine/builtin"
	"github.com/jobd/jobd/internal/buildinfo"
	"github.com/jobd/jobd/internal/certfile"
	"github.com/jobd/jobd/internal/gateway"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/internal/redact"
	"github.com/jobd/jobd/internal/remote"
	"github.com/jobd/jobd/internal/telemetry"
	"github.com/jobd/jobd/internal/web"
	"github.com/jobd/jobd/internal/webhook"
	"github.com/jobd/jobd/process"
	"github.com/jobd/jobd/schedule"
	"github.com/jobd/jobd/store"
)

// maxReadHeaderTimeout bounds the reading of a request's headers; a
// shorter read timeout bounds it more.
const maxReadHeaderTimeout = 10 * time.Second

// drainWait is how long a stopping server lets short requests finish
// before it cancels the requests' contexts (long-polls, streams).
const drainWait = 2 * time.Second

// Server is a jobd node: everything `jobd serve` runs, built by NewServer.
type Server struct {
	cfg     Config
	log     *slog.Logger
	store   store.Store
	ownsDB  bool
	engine  *engine.Engine
	health  *telemetry.Health
	handler http.Handler
	metrics http.Handler // the metrics listener's handler, when one is configured
	ln      net.Listener
	certs   *certfile.Reloader
	// secret records a secret for the logs to mask (and cfg.OnSecret).
	secret func(string)
}

// NewServer builds a node from cfg: it opens (or takes) the store and
// migrates it, builds the engine with its pools and duties, the
// schedules, webhooks, processes, gateway, API and dashboard, and, when
// cfg.Listen is set, listens (Addr tells where). Nothing runs until Run.
// An error marked ErrInvalidConfig is the Config's; close nothing on
// error: NewServer releases what it opened.
func NewServer(ctx context.Context, cfg Config) (_ *Server, err error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	secrets := &redact.Secrets{}
	s := &Server{cfg: cfg, log: slog.New(redact.NewHandler(cfg.Logger.Handler(), secrets))}
	s.addSecrets(secrets)
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if err := s.openStore(ctx); err != nil {
		return nil, err
	}
	if err := s.build(ctx, secrets); err != nil {
		return nil, err
	}
	if err := s.listen(); err != nil {
		return nil, err
	}
	return s, nil
}

// addSecrets records every secret of the configuration for the logs to
// mask, tells cfg.OnSecret, and sets s.secret for the ones learnt later.
func (s *Server) addSecrets(secrets *redact.Secrets) {
	s.secret = func(v string) {
		if v == "" {
			return
		}
		secrets.Add(v)
		if s.cfg.OnSecret != nil {
			s.cfg.OnSecret(v)
		}
	}
	for _, v := range s.cfg.Secrets() {
		s.secret(v)
	}
}

// openStore opens cfg.Database unless cfg.Store is given, and migrates.
func (s *Server) openStore(ctx context.Context) error {
	s.store = s.cfg.Store
	if s.store == nil {
		st, err := OpenStore(ctx, s.cfg.Database, StoreOptions{Logger: s.log, Postgres: s.cfg.Postgres})
		if err != nil {
			return err
		}
		s.store, s.ownsDB = st, true
	}
	if err := s.store.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// build makes the engine and every service over the store, and the
// HTTP handler that serves them.
func (s *Server) build(ctx context.Context, secrets *redact.Secrets) error {
	c := s.cfg
	queues := s.queues()
	var eng *engine.Engine
	tcfg := telemetry.Config{Version: buildinfo.Version(), Pools: poolsOf(s.store),
		Leading: func() bool { return eng != nil && eng.Leading() }}
	if len(c.Processes) > 0 {
		tcfg.ProcessQueue = process.DefaultQueue
	}
	if len(c.Gateway.Upstreams) > 0 {
		tcfg.GatewayQueue = gateway.Queue
	}
	metrics := telemetry.NewMetrics(tcfg)
	ecfg := c.Engine
	ecfg.Store, ecfg.Queues, ecfg.Logger, ecfg.Observer, ecfg.Tracer = s.store, queues, s.log, metrics, c.Tracer
	ecfg.Listen = true // the remote workers' long-polling claims share the engine's Listen
	eng, err := engine.New(ecfg)
	if err != nil {
		return invalidErr(err)
	}
	s.engine = eng
	ecfg = ecfg.WithDefaults()
	sweep, err := remote.OfflineSweep(remote.SweepConfig{
		Registry: s.store, OfflineAfter: c.WorkerOfflineAfter, Interval: ecfg.ReaperInterval, Logger: s.log,
	})
	if err != nil {
		return invalid("--worker-offline-after: %v", err)
	}
	if err := eng.AddDuty(sweep); err != nil {
		return err
	}
	scheduler, err := schedule.New(schedule.Config{Store: s.store, Logger: s.log, MaxArgsBytes: c.MaxArgsBytes})
	if err != nil {
		return err
	}
	if err := scheduler.ApplyConfig(ctx, c.Schedules); err != nil {
		return fmt.Errorf("--schedules: %w", err)
	}
	if err := eng.AddDuty(scheduler.Duty()); err != nil {
		return err
	}
	builtin.Register(eng)
	hooks, err := s.webhooks(ctx, eng, metrics)
	if err != nil {
		return err
	}
	s.health = metrics.WatchHealth(telemetry.HealthConfig{Source: s.store, Interval: c.Metrics.HealthInterval, Logger: s.log})
	streams, err := httpapi.NewStreams(httpapi.StreamLimits{
		MaxOpen: c.HTTP.MaxStreams, MaxPerCaller: c.HTTP.MaxStreamsPerCaller, MaxAge: c.HTTP.StreamMaxAge,
		Recheck: c.HTTP.StreamRecheck,
	})
	if err != nil {
		return invalidErr(err)
	}
	// The remote workers' steps and children are held to the engine's
	// limits (Engine.MaxSteps, MaxStepResultBytes, MaxChildren): a job
	// has the same limits whichever worker runs it.
	workers, err := remote.New(remote.Config{Store: s.store, Policy: eng, PreferWindow: ecfg.PreferWindow,
		Logger: s.log, Jobs: metrics, Tracer: c.Tracer,
		MaxSteps: ecfg.MaxSteps, MaxStepResultBytes: ecfg.MaxStepResultBytes, MaxChildren: ecfg.MaxChildren})
	if err != nil {
		return invalidErr(err)
	}
	apiCfg := httpapi.Config{
		Store: s.store, Logger: s.log, Version: buildinfo.Version(), AdminSecret: c.AdminSecret,
		MaxBodyBytes: c.HTTP.MaxBodyBytes, MaxArgsBytes: c.MaxArgsBytes, PollInterval: c.HTTP.PollInterval,
		Remote: workers, Metrics: metrics.Handler(), MetricsPublic: c.Metrics.Public, Schedules: scheduler,
		Observer: httpapi.Observer{Jobs: metrics, HTTP: metrics, Process: metrics, Tracer: c.Tracer, Workflows: metrics},
		Webhooks: hooks, Streams: streams, WorkflowMaxTasks: c.WorkflowMaxTasks,
	}
	if len(c.Processes) > 0 {
		if apiCfg.Processes, err = process.New(s.store, eng, "", c.Processes, process.WithObserver(metrics)); err != nil {
			return invalidErr(err)
		}
		s.log.Info("durable processes on", "namespaces", len(c.Processes))
	}
	gw, err := s.gateway(ctx, eng, metrics)
	if err != nil {
		return err
	}
	if gw != nil {
		apiCfg.Async = gw.Results()
	}
	handler, err := s.surface(apiCfg, gw)
	if err != nil {
		return err
	}
	s.handler = httpapi.Instrument(guardHost(c.Listen, handler), httpapi.InstrumentConfig{Logger: s.log, Observer: metrics})
	if c.Metrics.Listen != "" {
		mh := httpapi.MetricsHandler(s.store, c.AdminSecret, c.Metrics.Public, metrics.Handler(), s.log)
		mh = guardHost(c.Metrics.Listen, httpapi.RefuseCrossSite(mh, false))
		s.metrics = httpapi.Instrument(mh, httpapi.InstrumentConfig{Logger: s.log, Observer: metrics})
	}
	if c.TLSCertFile != "" {
		if s.certs, err = certfile.New(c.TLSCertFile, c.TLSKeyFile, s.log); err != nil {
			return err
		}
	}
	return nil
}

// queues returns the engine's pools: cfg.Engine.Queues, plus the pools
// of the configured services whose queues it does not name.
func (s *Server) queues() []engine.QueueConfig {
	c := s.cfg
	queues := c.Engine.Queues
	add := func(q engine.QueueConfig) {
		for _, have := range queues {
			if have.Queue == q.Queue {
				return
			}
		}
		queues = append(queues, q)
	}
	if len(c.Gateway.Upstreams) > 0 && c.Gateway.Concurrency > 0 {
		add(engine.QueueConfig{Queue: gateway.Queue, Concurrency: c.Gateway.Concurrency})
	}
	if len(c.Processes) > 0 {
		add(engine.QueueConfig{Queue: process.DefaultQueue, Concurrency: DefaultProcessConcurrency})
	}
	if c.Webhooks.Concurrency > 0 {
		add(engine.QueueConfig{Queue: webhook.Queue, Concurrency: c.Webhooks.Concurrency, Backoff: webhook.DefaultBackoff})
	}
	return queues
}

// webhooks makes the node's webhook service: the callback secret (given,
// or kept in the store, made at the first start) and the configuration's
// subscriptions written to the store.
func (s *Server) webhooks(ctx context.Context, eng *engine.Engine, metrics *telemetry.Metrics) (*webhook.Service, error) {
	c := s.cfg.Webhooks
	secret, err := webhook.CallbackSecret(ctx, s.store, c.CallbackSecret)
	if err != nil {
		return nil, err
	}
	s.secret(secret)
	svc, err := webhook.New(webhook.Config{
		Store: s.store, Engine: eng, CallbackSecret: secret, Logger: s.log, Observer: metrics, Workflows: metrics,
		Guard:       webhook.Guard{AllowPrivate: c.AllowPrivate, AllowNetworks: c.AllowNetworks},
		MaxAttempts: c.MaxAttempts, Timeout: c.Timeout, AlertInterval: c.AlertInterval,
		FailureCount: c.FailureCount, FailureWindow: c.FailureWindow, BacklogAge: c.BacklogAge,
		UserAgent: "jobd-webhooks/" + buildinfo.Version(),
	})
	if err != nil {
		return nil, invalidErr(err)
	}
	if err := svc.Configure(ctx, c.Subscriptions); err != nil {
		return nil, fmt.Errorf("--webhooks: %w", err)
	}
	if len(c.Subscriptions) > 0 {
		s.log.Info("webhooks configured", "subscriptions", len(c.Subscriptions))
	}
	return svc, nil
}

// gateway makes the async gateway when upstreams are configured.
func (s *Server) gateway(ctx context.Context, eng *engine.Engine, metrics *telemetry.Metrics) (*gateway.Gateway, error) {
	c := s.cfg
	if len(c.Gateway.Upstreams) == 0 {
		return nil, nil
	}
	gcfg := gateway.Config{
		Store: s.store, Engine: eng, Upstreams: c.Gateway.Upstreams, Logger: s.log, Observer: metrics, Tracer: c.Tracer,
		MaxPending: c.Gateway.MaxPending, ResultTTL: c.Gateway.ResultTTL,
		MaxResponseBytes: c.Gateway.MaxResponseBytes, MaxArgsBytes: c.MaxArgsBytes,
		MaxAttempts: c.Gateway.MaxAttempts, SweepInterval: c.Gateway.SweepInterval, Clock: c.Engine.Clock,
	}
	if c.AdminSecret != "" {
		gcfg.Authorizer = httpapi.NewAuthorizer(s.store, c.AdminSecret)
	}
	gw, err := gateway.New(gcfg)
	if err != nil {
		return nil, invalidErr(err)
	}
	if err := gw.ThrottleByUpstream(ctx); err != nil {
		return nil, err
	}
	names := make([]string, len(c.Gateway.Upstreams))
	for i, u := range c.Gateway.Upstreams {
		names[i] = u.Name
	}
	s.log.Info("async gateway on", "upstreams", strings.Join(names, ","))
	return gw, nil
}

// surface composes the HTTP surface: the dashboard at /ui/, the
// gateway's /gw/ and /_api/job routes, and the API at every other path.
func (s *Server) surface(apiCfg httpapi.Config, gw *gateway.Gateway) (http.Handler, error) {
	api, err := httpapi.New(apiCfg)
	if err != nil {
		return nil, invalidErr(err)
	}
	stream, err := httpapi.NewJobStream(apiCfg)
	if err != nil {
		return nil, invalidErr(err)
	}
	ui, err := web.New(web.Config{
		Store: s.store, AdminSecret: apiCfg.AdminSecret, JobStream: stream,
		Health: s.health.Snapshot, Leading: s.engine.Leading, Processes: apiCfg.Processes, Async: gw,
		Schedules: apiCfg.Schedules, Logger: s.log, ScanLimit: s.cfg.Dashboard.ScanLimit, Clock: s.cfg.Engine.Clock,
	})
	if err != nil {
		return nil, invalidErr(err)
	}
	mux := http.NewServeMux()
	web.Mount(mux, ui)
	if gw != nil {
		// The gateway's routes beside the API's, which serve its
		// /api/v1/async/ results themselves.
		gwHandler := httpapi.RefuseCrossSite(gw.Handler(), false)
		for _, p := range []string{"/gw/", "/_api/job", "/_api/job/"} {
			mux.Handle(p, gwHandler)
		}
	}
	mux.Handle("/", api)
	return mux, nil
}

// listen opens cfg.Listen, if set.
func (s *Server) listen() error {
	if s.cfg.Listen == "" {
		return nil
	}
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	s.ln = ln
	return nil
}

// Addr is the address Run serves on: cfg.Listen with its port resolved,
// or "" when the server has no listener.
func (s *Server) Addr() string {
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Handler is the whole HTTP surface (API, gateway, dashboard, /metrics),
// as Run serves it, for a caller that serves it itself.
func (s *Server) Handler() http.Handler { return s.handler }

// Engine is the node's engine: Register handlers on it before Run.
func (s *Server) Engine() *engine.Engine { return s.engine }

// Store is the node's store.
func (s *Server) Store() store.Store { return s.store }

// Close releases what NewServer opened: the listener and, unless
// cfg.Store was given, the store. Call it after Run returns.
func (s *Server) Close() error {
	var err error
	if s.ln != nil {
		if cerr := s.ln.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
			err = cerr
		}
	}
	if s.ownsDB && s.store != nil {
		err = errors.Join(err, s.store.Close())
	}
	return err
}

// Run serves until ctx ends, then stops gracefully: the engine stops
// claiming and lets running jobs finish for its ShutdownTimeout before it
// releases them, and the HTTP servers drain (long-polls and streams end
// at once). It returns the first failure of the HTTP server or the
// engine, nil after a stop that ctx asked for.
func (s *Server) Run(ctx context.Context) error {
	hctx, stopHealth := context.WithCancel(ctx)
	healthDone := make(chan struct{})
	go func() { defer close(healthDone); s.health.Run(hctx) }()
	defer func() { stopHealth(); <-healthDone }()
	if s.metrics != nil {
		stop, err := s.serveMetrics(ctx)
		if err != nil {
			return err
		}
		defer stop()
	}
	if s.ln == nil {
		return s.runEngine(ctx)
	}
	return s.serve(ctx)
}

// runEngine runs the engine alone until ctx ends.
func (s *Server) runEngine(ctx context.Context) error {
	if err := s.engine.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("engine: %w", err)
	}
	return nil
}

// httpServer returns an HTTP server of handler with the configured
// timeouts: the read timeout bounds the reading of a request, headers
// and body (net/http lifts it once the body is read); the write timeout
// the rest, but for the handlers that move their own (the API's
// long-polls and streams).
func (s *Server) httpServer(handler http.Handler) *http.Server {
	h := s.cfg.HTTP
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: min(maxReadHeaderTimeout, h.ReadTimeout),
		ReadTimeout:       h.ReadTimeout,
		WriteTimeout:      h.WriteTimeout,
		IdleTimeout:       h.IdleTimeout,
		// Its errors are its clients' (a TLS handshake refused): warnings.
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// serve runs the HTTP server and the engine until ctx ends, then stops
// both: the engine finishes or releases its jobs, the server drains.
func (s *Server) serve(ctx context.Context) error {
	srv := s.httpServer(s.handler)
	// Requests run under baseCtx, cancelled at shutdown so that long-polls
	// and event streams end at once instead of holding Shutdown up.
	baseCtx, cancelRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRequests()
	srv.BaseContext = func(net.Listener) context.Context { return baseCtx }
	scheme := "http"
	if s.certs != nil {
		scheme = "https"
		srv.TLSConfig = &tls.Config{GetCertificate: s.certs.GetCertificate, MinVersion: tls.VersionTLS12}
	}
	s.log.Info("jobd serving", "addr", s.Addr(), "scheme", scheme, "version", buildinfo.Version())

	httpDone := make(chan error, 1)
	go func() {
		if s.certs != nil {
			httpDone <- srv.ServeTLS(s.ln, "", "")
			return
		}
		httpDone <- srv.Serve(s.ln)
	}()
	engineCtx, stopEngine := context.WithCancel(ctx)
	defer stopEngine()
	engineDone := make(chan error, 1)
	go func() { engineDone <- s.engine.Run(engineCtx) }()

	var runErr error
	select {
	case <-ctx.Done():
	case err := <-httpDone:
		runErr = fmt.Errorf("http server: %w", err)
	}
	s.log.Info("jobd stopping")
	stopEngine()
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := drain(shutdownCtx, srv, cancelRequests); err != nil {
		_ = srv.Close()
	}
	if runErr == nil {
		if err := <-httpDone; err != nil && !errors.Is(err, http.ErrServerClosed) {
			runErr = fmt.Errorf("http server: %w", err)
		}
	}
	if err := <-engineDone; err != nil && !errors.Is(err, context.Canceled) {
		runErr = errors.Join(runErr, fmt.Errorf("engine: %w", err))
	}
	s.log.Info("jobd stopped")
	return runErr
}

// drain shuts srv down: short requests get a moment to finish, then the
// request contexts are cancelled so long-polls and streams end too.
func drain(ctx context.Context, srv *http.Server, cancelRequests context.CancelFunc) error {
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(ctx) }()
	t := time.NewTimer(drainWait)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		cancelRequests()
		return <-done
	}
}

// serveMetrics serves the metrics handler on cfg.Metrics.Listen until
// stop is called.
func (s *Server) serveMetrics(ctx context.Context) (stop func(), err error) {
	ln, err := net.Listen("tcp", s.cfg.Metrics.Listen)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen: %w", err)
	}
	srv := s.httpServer(s.metrics)
	s.log.Info("jobd serving metrics", "addr", ln.Addr().String())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Warn("metrics server", "err", err)
		}
	}, nil
}

// guardHost wraps handler, served on addr, so that a server listening on
// a loopback address answers only loopback host names (DNS rebinding:
// httpapi.LoopbackHostsOnly).
func guardHost(addr string, handler http.Handler) http.Handler {
	if !loopbackListen(addr) {
		return handler
	}
	return httpapi.LoopbackHostsOnly(handler)
}

// loopbackListen reports whether a listen address (host:port) is a
// loopback one only: localhost, 127.0.0.0/8 or ::1. An empty host (every
// address) is not.
func loopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && host != "" && httpapi.LoopbackHost(host)
}

// poolsOf returns st's pool reporter, if it has one.
func poolsOf(st store.Store) store.PoolReporter {
	p, _ := st.(store.PoolReporter)
	return p
}
