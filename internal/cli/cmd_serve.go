package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/engine/builtin"
	"github.com/jobd/jobd/gateway"
	"github.com/jobd/jobd/httpapi"
	"github.com/jobd/jobd/internal/buildinfo"
	"github.com/jobd/jobd/internal/certfile"
	"github.com/jobd/jobd/internal/telemetry"
	"github.com/jobd/jobd/observe"
	"github.com/jobd/jobd/process"
	"github.com/jobd/jobd/remote"
	"github.com/jobd/jobd/schedule"
	"github.com/jobd/jobd/store"
)

var serveCommand = &Command{
	Name:    "serve",
	Usage:   "jobd serve [--database URL] [--listen-database URL] [--listen ADDR] [--workers JSON] [flags]",
	Summary: "run the server: HTTP API and worker pools",
	Run:     runServe,
}

func init() { commands = append(commands, serveCommand) }

type serveFlags struct {
	database, listen, workers, node, adminSecret string
	tlsCert, tlsKey                              string
	logLevel, logFormat                          string
	shutdownTimeout, retention, abandonGrace     time.Duration
	heartbeat, poll, reaper, progress            time.Duration
	workerOffline, preferWindow, workerRetry     time.Duration
	maxBody, maxArgs                             int

	// The async gateway's.
	upstreams, upstreamTimeouts listFlag
	asyncMaxPending, asyncConc  int
	asyncMaxResponse            int64
	asyncResultTTL              time.Duration

	// Durable processes' HTTP processors, as JSON.
	processors string

	// Periodic jobs, as JSON.
	schedules string

	// Webhooks: alerts and callbacks.
	hooks webhookFlags

	// PostgreSQL's dedicated connections and pooler.
	pg pgFlags

	// Metrics.
	metricsListen  string
	metricsPublic  bool
	healthInterval time.Duration

	// The HTTP servers' timeouts and the event streams' bounds.
	http httpFlags
}

// listFlag is a repeatable flag; each value may hold several items
// separated by commas (the form of its environment variable).
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

func (f *serveFlags) register(fs *flag.FlagSet) {
	d := engine.Config{}.WithDefaults()
	fs.StringVar(&f.database, "database", defaultDatabase, "postgres://… or sqlite:PATH")
	fs.StringVar(&f.listen, "listen", "127.0.0.1:8080", "HTTP listen address")
	fs.StringVar(&f.workers, "workers", `[{"queue":"default","concurrency":4}]`, "worker pools as JSON: [{\"queue\":Q,\"concurrency\":N,\"backoff\":{…},\"global_limit\":N,\"partition_limit\":N,\"rate\":{\"limit\":N,\"period\":\"1m\"},\"throttle_by\":\"partition_key\"}]; a queue's limits, when set, replace its stored ones at start")
	fs.StringVar(&f.node, "node", "", "this node's name in leases (default host-pid-random)")
	fs.StringVar(&f.adminSecret, "admin-secret", "", "turns authentication on; the bearer secret with every scope")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "serve HTTPS with this PEM certificate (chain) file, reloaded when it changes; needs --tls-key")
	fs.StringVar(&f.tlsKey, "tls-key", "", "the PEM private key file of --tls-cert, reloaded when it changes")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "text", "text or json")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", d.ShutdownTimeout, "how long running jobs may finish on SIGTERM before they are released")
	fs.DurationVar(&f.retention, "retention", d.Retention, "finished jobs and their events are pruned after this")
	fs.DurationVar(&f.abandonGrace, "abandon-grace", d.AbandonGrace, "a handler still running this long past its job's deadline no longer counts against its pool")
	fs.DurationVar(&f.heartbeat, "heartbeat-interval", d.HeartbeatInterval, "lease renewal period of running jobs")
	fs.DurationVar(&f.poll, "poll-interval", d.PollInterval, "safety-net claim poll of idle workers")
	fs.DurationVar(&f.reaper, "reaper-interval", d.ReaperInterval, "period of the expired-lease reaper")
	fs.DurationVar(&f.progress, "progress-interval", d.ProgressInterval, "minimum gap between progress writes of one job")
	fs.IntVar(&f.maxBody, "max-body", 1<<20, "request body limit in bytes")
	fs.IntVar(&f.maxArgs, "max-args", 1<<20, "job args limit in bytes")
	fs.DurationVar(&f.workerOffline, "worker-offline-after", remote.DefaultOfflineAfter, "remote workers without a heartbeat this long are marked offline (env JOBD_WORKER_OFFLINE_AFTER)")
	fs.DurationVar(&f.preferWindow, "prefer-window", d.PreferWindow, "how long a job's prefers hold it back from workers without them")
	fs.DurationVar(&f.workerRetry, "worker-retry-delay", 0, "deprecated and ignored: a job a remote worker fails as retryable waits its queue's backoff (see --workers)")

	fs.Var(&f.upstreams, "upstream", "async gateway: serve /gw/NAME/ in front of URL, as NAME=URL (repeatable; env JOBD_UPSTREAMS=name=url,...)")
	fs.Var(&f.upstreamTimeouts, "upstream-timeout", "async gateway: timeout of each upstream call, DURATION for all or NAME=DURATION (repeatable; default 1h)")
	fs.IntVar(&f.asyncMaxPending, "async-max-pending", gateway.DefaultMaxPending, "async gateway: queued or running requests beyond which a new one gets 503")
	fs.DurationVar(&f.asyncResultTTL, "async-result-ttl", gateway.DefaultResultTTL, "async gateway: unfetched results are removed after this")
	fs.Int64Var(&f.asyncMaxResponse, "async-max-response", gateway.DefaultMaxResponseBytes, "async gateway: largest stored response body in bytes; a larger one fails its request")
	fs.StringVar(&f.schedules, "schedules", "", `periodic jobs as JSON [{"name":N,"cron":"0 3 * * *","timezone":"Europe/Berlin","job":{"kind":K,…},"overlap":"skip","catch_up":"one"}]; they win over the API's schedules of their names (env JOBD_SCHEDULES)`)
	fs.StringVar(&f.processors, "processors", "", `durable processes: HTTP processors as JSON [{"namespace":NS,"url":URL,"timeout":"30s"}] (env JOBD_PROCESSORS)`)
	fs.IntVar(&f.asyncConc, "async-concurrency", gateway.DefaultConcurrency, "async gateway: upstream calls this node makes at once (the gateway queue's worker pool)")
	fs.StringVar(&f.metricsListen, "metrics-listen", "", "also serve GET /metrics on this address (it is always on the API's --listen)")
	fs.BoolVar(&f.metricsPublic, "metrics-public", false, "serve /metrics without a credential even with --admin-secret")
	fs.DurationVar(&f.healthInterval, "queue-health-interval", telemetry.DefaultHealthInterval, "refresh period of the queue health gauges of /metrics (one store query each)")
	f.hooks.register(fs)
	f.pg.register(fs)
	f.http.register(fs)
}

// minAdminSecret is the length, in characters, under which jobd serve
// refuses an admin secret: it has every scope, and the API and the
// dashboard's login can be asked to try guesses of it.
const minAdminSecret = 16

// checkAdminSecret refuses an admin secret under minAdminSecret
// characters (a usage error); none at all turns authentication off. The
// message names the flag and its variable, never the secret.
func checkAdminSecret(secret string) error {
	if n := utf8.RuneCountInString(secret); secret != "" && n < minAdminSecret {
		return usageError("--admin-secret (JOBD_ADMIN_SECRET) must be at least %d characters, got %d: choose a long random one (openssl rand -hex 32)", minAdminSecret, n)
	}
	return nil
}

// gatewayQueue adds the gateway's worker pool to queues unless --workers
// configures one already.
func (f *serveFlags) gatewayQueue(queues []engine.QueueConfig) []engine.QueueConfig {
	for _, q := range queues {
		if q.Queue == gateway.Queue {
			return queues
		}
	}
	return append(queues, engine.QueueConfig{Queue: gateway.Queue, Concurrency: f.asyncConc})
}

// processQueue adds the process tasks' worker pool to queues unless
// --workers configures one already.
func processQueue(queues []engine.QueueConfig) []engine.QueueConfig {
	for _, q := range queues {
		if q.Queue == process.DefaultQueue {
			return queues
		}
	}
	return append(queues, engine.QueueConfig{Queue: process.DefaultQueue, Concurrency: 8})
}

func runServe(ctx context.Context, env *Env, args []string) error {
	var f serveFlags
	fs := newFlagSet(env, "serve")
	f.register(fs)
	if err := parseFlags(fs, env, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q", fs.Arg(0))
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return usageError("--tls-cert and --tls-key go together")
	}
	if err := checkAdminSecret(f.adminSecret); err != nil {
		return err
	}
	queues, err := engine.ParseQueues([]byte(f.workers))
	if err != nil {
		return usageError("--workers: %v", err)
	}
	if len(f.upstreams) == 0 {
		if v := env.Getenv("JOBD_UPSTREAMS"); v != "" {
			f.upstreams = listFlag{v}
		}
	}
	upstreams, err := gateway.ParseUpstreams(f.upstreams, f.upstreamTimeouts)
	if err != nil {
		return usageError("--upstream: %v", err)
	}
	if len(upstreams) > 0 {
		queues = f.gatewayQueue(queues)
	}
	var spaces []process.Namespace
	if f.processors != "" {
		if spaces, err = process.ParseNamespaces([]byte(f.processors)); err != nil {
			return usageError("--processors: %v", err)
		}
		queues = processQueue(queues)
	}
	var scheduleDefs []schedule.Definition
	if f.schedules != "" {
		if scheduleDefs, err = schedule.ParseConfig([]byte(f.schedules), f.maxArgs); err != nil {
			return usageError("--schedules: %v", err)
		}
	}
	if f.healthInterval <= 0 {
		return usageError("--queue-health-interval must be positive")
	}
	if err := f.pg.check(f.database); err != nil {
		return err
	}
	if err := f.hooks.check(); err != nil {
		return usageError("%v", err)
	}
	if err := f.http.check(); err != nil {
		return usageError("%v", err)
	}
	queues = f.hooks.queue(queues)
	secrets := f.secrets(upstreams, spaces)
	f.hooks.addSecrets(secrets)
	logger := newLogger(env, f.logLevel, f.logFormat, secrets)
	tracer, stopTracing, err := startTracing(ctx, env, logger, secrets)
	if err != nil {
		return usageError("%v", err)
	}
	defer stopTracing()

	st, err := openStoreWith(ctx, f.database, logger, f.pg)
	if err != nil {
		return err
	}
	defer st.Close()
	if env.wrapStore != nil {
		st = env.wrapStore(st)
	}
	if err := st.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var eng *engine.Engine
	telemetryCfg := telemetry.Config{Version: buildinfo.Version(), Pools: poolsOf(st),
		Leading: func() bool { return eng != nil && eng.Leading() }}
	if len(spaces) > 0 {
		telemetryCfg.ProcessQueue = process.DefaultQueue
	}
	if len(upstreams) > 0 {
		telemetryCfg.GatewayQueue = gateway.Queue
	}
	metrics := telemetry.NewMetrics(telemetryCfg)
	eng, err = engine.New(engine.Config{
		Store: st, Queues: queues, Node: f.node, Logger: logger, Observer: metrics, Tracer: tracer,
		HeartbeatInterval: f.heartbeat, PollInterval: f.poll, ReaperInterval: f.reaper,
		ProgressInterval: f.progress, Retention: f.retention, ShutdownTimeout: f.shutdownTimeout, AbandonGrace: f.abandonGrace,
		// The remote workers' long-polling claims share the engine's Listen.
		Listen: true, PreferWindow: f.preferWindow,
	})
	if err != nil {
		return usageError("%v", err)
	}
	sweep, err := remote.OfflineSweep(remote.SweepConfig{
		Registry: st, OfflineAfter: f.workerOffline, Interval: f.reaper, Logger: logger,
	})
	if err != nil {
		return usageError("--worker-offline-after: %v", err)
	}
	if err := eng.AddDuty(sweep); err != nil {
		return err
	}
	scheduler, err := schedule.New(schedule.Config{Store: st, Logger: logger, MaxArgsBytes: f.maxArgs})
	if err != nil {
		return err
	}
	if err := scheduler.ApplyConfig(ctx, scheduleDefs); err != nil {
		return fmt.Errorf("--schedules: %w", err)
	}
	if err := eng.AddDuty(scheduler.Duty()); err != nil {
		return err
	}
	builtin.Register(eng)
	hooks, err := f.hooks.start(ctx, st, eng, logger, secrets, metrics)
	if err != nil {
		return err
	}
	health := metrics.WatchHealth(telemetry.HealthConfig{Source: st, Interval: f.healthInterval, Logger: logger})
	streams, err := f.http.streams()
	if err != nil {
		return usageError("%v", err)
	}
	apiCfg := httpapi.Config{
		Store: st, Logger: logger, Version: buildinfo.Version(), AdminSecret: f.adminSecret,
		MaxBodyBytes: int64(f.maxBody), MaxArgsBytes: f.maxArgs,
		Wakeups: eng.Subscribe, PreferWindow: f.preferWindow, RetryDelay: eng.RetryDelay, QueueTimeout: eng.QueueTimeout,
		ClaimPace: eng.ClaimPace, Metrics: metrics.Handler(), MetricsPublic: f.metricsPublic, Schedules: scheduler,
		Observer: httpapi.Observer{Jobs: metrics, HTTP: metrics, Process: metrics, Tracer: tracer},
		Webhooks: hooks, Streams: streams,
	}
	if f.workerRetry != 0 {
		logger.Warn("--worker-retry-delay (JOBD_WORKER_RETRY_DELAY) is deprecated and ignored: a job a remote worker fails as retryable waits its queue's backoff, as in the engine (--workers \"backoff\"), unless the worker sends retry_after")
	}
	if len(spaces) > 0 {
		if apiCfg.Processes, err = process.New(st, eng, "", spaces, process.WithObserver(metrics)); err != nil {
			return usageError("%v", err)
		}
		logger.Info("durable processes on", "namespaces", len(spaces))
	}
	var gw *gateway.Gateway
	if len(upstreams) > 0 {
		gw, err = f.gateway(st, eng, upstreams, logger, metrics, tracer)
		if err != nil {
			return usageError("%v", err)
		}
		if err := gw.ThrottleByUpstream(ctx); err != nil {
			return err
		}
		apiCfg.Async = gw.Results()
	}
	handler, err := httpapi.New(apiCfg)
	if err != nil {
		return usageError("%v", err)
	}
	if gw != nil {
		// The gateway's routes beside the API's, which serve its
		// /api/v1/async/ results themselves.
		mux := http.NewServeMux()
		gwHandler := httpapi.RefuseCrossSite(gw.Handler(), false)
		for _, p := range []string{"/gw/", "/_api/job", "/_api/job/"} {
			mux.Handle(p, gwHandler)
		}
		mux.Handle("/", handler)
		handler = mux
		names := make([]string, len(upstreams))
		for i, u := range upstreams {
			names[i] = u.Name
		}
		logger.Info("async gateway on", "upstreams", strings.Join(names, ","))
	}
	if handler, err = withDashboard(apiCfg, handler, health, eng, gw, logger); err != nil {
		return usageError("%v", err)
	}
	handler = httpapi.Instrument(guardHost(f.listen, handler), httpapi.InstrumentConfig{Logger: logger, Observer: metrics})

	hctx, stopHealth := context.WithCancel(ctx)
	healthDone := make(chan struct{})
	go func() { defer close(healthDone); health.Run(hctx) }()
	defer func() { stopHealth(); <-healthDone }()
	if f.metricsListen != "" {
		mh := httpapi.MetricsHandler(st, f.adminSecret, f.metricsPublic, metrics.Handler(), logger)
		mh = guardHost(f.metricsListen, httpapi.RefuseCrossSite(mh, false))
		stop, err := serveMetrics(ctx, logger, f.metricsListen, f.http.server(httpapi.Instrument(mh, httpapi.InstrumentConfig{Logger: logger, Observer: metrics})))
		if err != nil {
			return err
		}
		defer stop()
	}
	var certs *certfile.Reloader
	if f.tlsCert != "" {
		if certs, err = certfile.New(f.tlsCert, f.tlsKey, logger); err != nil {
			return err
		}
	}
	return serve(ctx, env, logger, f.listen, f.http.server(handler), eng, certs)
}

// gateway builds the async gateway over the store and the engine.
func (f *serveFlags) gateway(st store.Store, eng *engine.Engine, upstreams []gateway.Upstream, logger *slog.Logger,
	obs observe.Gateway, tracer observe.Tracer) (*gateway.Gateway, error) {
	cfg := gateway.Config{
		Store: st, Engine: eng, Upstreams: upstreams, Logger: logger, Observer: obs, Tracer: tracer,
		MaxPending: f.asyncMaxPending, ResultTTL: f.asyncResultTTL,
		MaxResponseBytes: f.asyncMaxResponse, MaxArgsBytes: f.maxArgs,
	}
	switch {
	case f.asyncMaxPending <= 0:
		return nil, errors.New("--async-max-pending must be positive")
	case f.asyncResultTTL <= 0:
		return nil, errors.New("--async-result-ttl must be positive")
	case f.asyncMaxResponse <= 0:
		return nil, errors.New("--async-max-response must be positive")
	}
	if f.adminSecret != "" {
		cfg.Authorizer = httpapi.NewAuthorizer(st, f.adminSecret)
	}
	return gateway.New(cfg)
}

// serve runs the HTTP server srv (its handler and timeouts set) and the
// engine until ctx ends, then stops both: the engine finishes or releases
// its jobs, the server drains.
//
// With certs, it serves HTTPS with the certificate certs holds, which
// follows its files.
func serve(ctx context.Context, env *Env, logger *slog.Logger, addr string, srv *http.Server, eng *engine.Engine, certs *certfile.Reloader) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	env.signals.listening.Fire(ln.Addr().String())
	// Requests run under baseCtx, cancelled at shutdown so that long-polls
	// and event streams end at once instead of holding Shutdown up.
	baseCtx, cancelRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRequests()
	srv.BaseContext = func(net.Listener) context.Context { return baseCtx }
	// Its errors are its clients' (a TLS handshake refused): warnings.
	srv.ErrorLog = slog.NewLogLogger(logger.Handler(), slog.LevelWarn)
	scheme := "http"
	if certs != nil {
		scheme = "https"
		srv.TLSConfig = &tls.Config{GetCertificate: certs.GetCertificate, MinVersion: tls.VersionTLS12}
	}
	logger.Info("jobd serving", "addr", ln.Addr().String(), "scheme", scheme, "version", buildinfo.Version())

	httpDone := make(chan error, 1)
	go func() {
		if certs != nil {
			httpDone <- srv.ServeTLS(ln, "", "")
			return
		}
		httpDone <- srv.Serve(ln)
	}()
	engineCtx, stopEngine := context.WithCancel(ctx)
	defer stopEngine()
	engineDone := make(chan error, 1)
	go func() { engineDone <- eng.Run(engineCtx) }()

	var runErr error
	select {
	case <-ctx.Done():
	case err := <-httpDone:
		runErr = fmt.Errorf("http server: %w", err)
	}
	logger.Info("jobd stopping")
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
	logger.Info("jobd stopped")
	return runErr
}

// drain shuts srv down: short requests get a moment to finish, then the
// request contexts are cancelled so long-polls and streams end too.
func drain(ctx context.Context, srv *http.Server, cancelRequests context.CancelFunc) error {
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(ctx) }()
	select {
	case err := <-done:
		return err
	case <-time.After(2 * time.Second):
		cancelRequests()
		return <-done
	}
}
