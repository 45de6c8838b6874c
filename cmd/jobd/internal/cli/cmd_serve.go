package cli

import (
	"context"
	"errors"
	"flag"
	"strings"
	"time"

	"github.com/jobd/jobd"
	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/internal/redact"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/process"
	"github.com/jobd/jobd/schedule"
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
	workflowMaxTasks                             int
	maxSteps, maxStepResult, maxChildren         int

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
	fs.IntVar(&f.workflowMaxTasks, "workflow-max-tasks", job.DefaultWorkflowMaxTasks, "the most tasks a workflow may hold (POST /api/v1/workflows)")
	fs.IntVar(&f.maxSteps, "max-steps", job.DefaultMaxSteps, "the most steps a job may record (docs/steps-and-children.md)")
	fs.IntVar(&f.maxStepResult, "max-step-result-bytes", job.DefaultMaxStepResult, "the largest result one step may record, in bytes of JSON")
	fs.IntVar(&f.maxChildren, "max-children", job.DefaultMaxChildren, "the most children a job may spawn")
	fs.DurationVar(&f.workerOffline, "worker-offline-after", jobd.DefaultWorkerOfflineAfter, "remote workers without a heartbeat this long are marked offline (env JOBD_WORKER_OFFLINE_AFTER)")
	fs.DurationVar(&f.preferWindow, "prefer-window", d.PreferWindow, "how long a job's prefers hold it back from workers without them")
	fs.DurationVar(&f.workerRetry, "worker-retry-delay", 0, "deprecated and ignored: a job a remote worker fails as retryable waits its queue's backoff (see --workers)")

	fs.Var(&f.upstreams, "upstream", "async gateway: serve /gw/NAME/ in front of URL, as NAME=URL (repeatable; env JOBD_UPSTREAMS=name=url,...)")
	fs.Var(&f.upstreamTimeouts, "upstream-timeout", "async gateway: timeout of each upstream call, DURATION for all or NAME=DURATION (repeatable; default 1h)")
	fs.IntVar(&f.asyncMaxPending, "async-max-pending", jobd.DefaultGatewayMaxPending, "async gateway: queued or running requests beyond which a new one gets 503")
	fs.DurationVar(&f.asyncResultTTL, "async-result-ttl", jobd.DefaultGatewayResultTTL, "async gateway: unfetched results are removed after this")
	fs.Int64Var(&f.asyncMaxResponse, "async-max-response", jobd.DefaultGatewayMaxResponseBytes, "async gateway: largest stored response body in bytes; a larger one fails its request")
	fs.StringVar(&f.schedules, "schedules", "", `periodic jobs as JSON [{"name":N,"cron":"0 3 * * *","timezone":"Europe/Berlin","job":{"kind":K,…},"overlap":"skip","catch_up":"one"}]; they win over the API's schedules of their names (env JOBD_SCHEDULES)`)
	fs.StringVar(&f.processors, "processors", "", `durable processes: HTTP processors as JSON [{"namespace":NS,"url":URL,"timeout":"30s"}] (env JOBD_PROCESSORS)`)
	fs.IntVar(&f.asyncConc, "async-concurrency", jobd.DefaultGatewayConcurrency, "async gateway: upstream calls this node makes at once (the gateway queue's worker pool)")
	fs.StringVar(&f.metricsListen, "metrics-listen", "", "also serve GET /metrics on this address (it is always on the API's --listen)")
	fs.BoolVar(&f.metricsPublic, "metrics-public", false, "serve /metrics without a credential even with --admin-secret")
	fs.DurationVar(&f.healthInterval, "queue-health-interval", jobd.DefaultQueueHealthInterval, "refresh period of the queue health gauges of /metrics (one store query each)")
	f.hooks.register(fs)
	f.pg.register(fs)
	f.http.register(fs)
}

// checkAdminSecret refuses an admin secret under jobd.MinAdminSecret
// characters (a usage error); none at all turns authentication off. The
// message names the flag and its variable, never the secret.
func checkAdminSecret(secret string) error {
	return usage(jobd.Config{AdminSecret: secret}.Check())
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
	if err := f.positive(); err != nil {
		return err
	}
	cfg, err := f.config(env)
	if err != nil {
		return err
	}
	if err := usage(cfg.Check()); err != nil {
		return err
	}
	secrets := &redact.Secrets{}
	secrets.Add(cfg.Secrets()...)
	cfg.OnSecret = func(v string) { secrets.Add(v) }
	cfg.Logger = newLogger(env, f.logLevel, f.logFormat, secrets)
	tracer, stopTracing, err := startTracing(ctx, env, cfg.Logger, secrets)
	if err != nil {
		return usageError("%v", err)
	}
	defer stopTracing()
	cfg.Tracer = tracer
	if f.workerRetry != 0 {
		cfg.Logger.Warn("--worker-retry-delay (JOBD_WORKER_RETRY_DELAY) is deprecated and ignored: a job a remote worker fails as retryable waits its queue's backoff, as in the engine (--workers \"backoff\"), unless the worker sends retry_after")
	}
	if env.wrapStore != nil {
		st, err := jobd.OpenStore(ctx, cfg.Database, jobd.StoreOptions{Logger: cfg.Logger, Postgres: cfg.Postgres})
		if err != nil {
			return usage(err)
		}
		defer st.Close()
		cfg.Store = env.wrapStore(st)
	}
	srv, err := jobd.NewServer(ctx, cfg)
	if err != nil {
		return usage(err)
	}
	defer srv.Close()
	env.points.listening.Report(srv.Addr())
	return srv.Run(ctx)
}

// config parses the flags into the server's configuration. A flag whose
// value does not parse is a usage error naming it; the rest of the
// checks are jobd.Config's.
func (f *serveFlags) config(env *Env) (jobd.Config, error) {
	queues, err := engine.ParseQueues([]byte(f.workers))
	if err != nil {
		return jobd.Config{}, usageError("--workers: %v", err)
	}
	if len(f.upstreams) == 0 {
		if v := env.Getenv("JOBD_UPSTREAMS"); v != "" {
			f.upstreams = listFlag{v}
		}
	}
	upstreams, err := jobd.ParseUpstreams(f.upstreams, f.upstreamTimeouts)
	if err != nil {
		return jobd.Config{}, usageError("--upstream: %v", err)
	}
	var spaces []process.Namespace
	if f.processors != "" {
		if spaces, err = process.ParseNamespaces([]byte(f.processors)); err != nil {
			return jobd.Config{}, usageError("--processors: %v", err)
		}
	}
	var schedules []schedule.Definition
	if f.schedules != "" {
		if schedules, err = schedule.ParseConfig([]byte(f.schedules), f.maxArgs); err != nil {
			return jobd.Config{}, usageError("--schedules: %v", err)
		}
	}
	hooks, err := f.hooks.config()
	if err != nil {
		return jobd.Config{}, usageError("%v", err)
	}
	return jobd.Config{
		Database: f.database, Postgres: jobd.PostgresConfig{ListenURL: f.pg.listen, Pooler: f.pg.pooler},
		Listen: f.listen, TLSCertFile: f.tlsCert, TLSKeyFile: f.tlsKey, AdminSecret: f.adminSecret,
		Engine: engine.Config{
			Queues: queues, Node: f.node, PreferWindow: f.preferWindow,
			HeartbeatInterval: f.heartbeat, PollInterval: f.poll, ReaperInterval: f.reaper,
			ProgressInterval: f.progress, Retention: f.retention, ShutdownTimeout: f.shutdownTimeout, AbandonGrace: f.abandonGrace,
			MaxSteps: f.maxSteps, MaxStepResultBytes: f.maxStepResult, MaxChildren: f.maxChildren,
		},
		MaxArgsBytes: f.maxArgs, WorkflowMaxTasks: f.workflowMaxTasks,
		HTTP: jobd.HTTPConfig{
			MaxBodyBytes: int64(f.maxBody), ReadTimeout: f.http.readTimeout, WriteTimeout: f.http.writeTimeout,
			IdleTimeout: f.http.idleTimeout, MaxStreams: f.http.maxStreams, MaxStreamsPerCaller: f.http.maxStreamsPerKey,
			StreamMaxAge: f.http.streamMaxAge,
		},
		WorkerOfflineAfter: f.workerOffline,
		Gateway: jobd.GatewayConfig{
			Upstreams: upstreams, MaxPending: f.asyncMaxPending, Concurrency: f.asyncConc,
			ResultTTL: f.asyncResultTTL, MaxResponseBytes: f.asyncMaxResponse,
		},
		Processes: spaces, Schedules: schedules, Webhooks: hooks,
		Metrics: jobd.MetricsConfig{Listen: f.metricsListen, Public: f.metricsPublic, HealthInterval: f.healthInterval},
	}, nil
}

// positive refuses the flags set to zero or less that must be positive:
// in jobd.Config their zero means the default, which a flag states
// outright.
func (f *serveFlags) positive() error {
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{
		{"--read-timeout", f.http.readTimeout}, {"--write-timeout", f.http.writeTimeout},
		{"--idle-timeout", f.http.idleTimeout}, {"--stream-max-age", f.http.streamMaxAge},
		{"--queue-health-interval", f.healthInterval}, {"--async-result-ttl", f.asyncResultTTL},
		{"--webhook-timeout", f.hooks.timeout}, {"--alert-interval", f.hooks.alertInterval},
		{"--alert-failure-window", f.hooks.failureWindow}, {"--alert-backlog-age", f.hooks.backlogAge},
	} {
		if d.v <= 0 {
			return usageError("%s must be positive", d.flag)
		}
	}
	for _, n := range []struct {
		flag string
		v    int64
	}{
		{"--max-streams", int64(f.http.maxStreams)}, {"--max-streams-per-key", int64(f.http.maxStreamsPerKey)},
		{"--async-max-pending", int64(f.asyncMaxPending)}, {"--async-max-response", f.asyncMaxResponse},
		{"--webhook-max-attempts", int64(f.hooks.maxAttempts)}, {"--alert-failures", int64(f.hooks.failureCount)},
		{"--max-steps", int64(f.maxSteps)}, {"--max-step-result-bytes", int64(f.maxStepResult)}, {"--max-children", int64(f.maxChildren)},
	} {
		if n.v <= 0 {
			return usageError("%s must be positive", n.flag)
		}
	}
	return nil
}

// usage makes an error of the configuration (jobd.ErrInvalidConfig) a
// usage error, worded as the flag's; other errors pass as they are.
func usage(err error) error {
	if err == nil || !errors.Is(err, jobd.ErrInvalidConfig) {
		return err
	}
	return usageError("%s", strings.TrimPrefix(err.Error(), jobd.ErrInvalidConfig.Error()+": "))
}
