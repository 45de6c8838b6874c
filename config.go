package jobd

import (
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"time"
	"unicode/utf8"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/internal/gateway"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/internal/redact"
	"github.com/jobd/jobd/internal/remote"
	"github.com/jobd/jobd/internal/telemetry"
	"github.com/jobd/jobd/internal/webhook"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/observe"
	"github.com/jobd/jobd/process"
	"github.com/jobd/jobd/schedule"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/postgres"
)

// Defaults of Config.
const (
	// DefaultDatabase is the store of a Config that names none: an SQLite
	// file in the working directory.
	DefaultDatabase = "sqlite:jobd.db"
	// MinAdminSecret is the length, in characters, under which an admin
	// secret is refused: it holds every scope, and the API and the
	// dashboard's login can be asked to try guesses of it.
	MinAdminSecret = 16
	// DefaultMaxBodyBytes limits a request's body.
	DefaultMaxBodyBytes = httpapi.DefaultMaxBodyBytes
	// DefaultReadTimeout bounds the reading of a request, headers and
	// body: a body of the default 1 MiB limit must come at 35 KiB/s.
	DefaultReadTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds a request's handling and its answer,
	// from the end of its headers: the longest a client that stops
	// reading holds its answer in memory. Long-polls and streams move
	// their own deadline.
	DefaultWriteTimeout = 60 * time.Second
	// DefaultIdleTimeout closes a kept-alive connection that sends no
	// next request (Go's client keeps its idle ones 90s).
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultProcessConcurrency is the worker pool of the processes'
	// tasks when Engine.Queues sets none.
	DefaultProcessConcurrency = 8
)

// ErrInvalidConfig marks the errors of NewServer that a Config caused
// (a bad value, a missing setting), as opposed to the database or the
// network: the same Config fails the same way. Compare with errors.Is.
var ErrInvalidConfig = errors.New("invalid configuration")

// Config configures a Server: everything `jobd serve` runs. Its zero
// fields take the documented defaults; the CLI only parses flags into it.
type Config struct {
	// Database names the store: "postgres://…" (or "postgresql://…")
	// for PostgreSQL, "sqlite:PATH" for an SQLite file. Default
	// DefaultDatabase. Ignored when Store is set.
	Database string
	// Postgres configures a PostgreSQL Database beyond its URL.
	Postgres PostgresConfig
	// Store, when set, is the store the server uses instead of opening
	// Database; the caller closes it. The server migrates it.
	Store store.Store

	// Listen is the address Run serves HTTP on ("127.0.0.1:8080"; ":0"
	// for a free port, which Addr tells). Empty: Run serves no listener,
	// and the caller serves Handler itself (a test's httptest server).
	Listen string
	// TLSCertFile and TLSKeyFile serve HTTPS with this PEM certificate
	// (chain) and key, loaded again when the files change. Both or none.
	TLSCertFile, TLSKeyFile string
	// AdminSecret turns authentication on: every route but /health and
	// /openapi.json then needs a credential; this one holds every scope.
	// At least MinAdminSecret characters. Empty: authentication off.
	AdminSecret string

	// Logger receives the server's logs through a handler that masks
	// every secret the server holds; default slog.Default().
	Logger *slog.Logger
	// Tracer makes each execution and request a span; default none.
	Tracer observe.Tracer
	// OnSecret, when set, is called with each secret the server holds,
	// the ones it learns at start included (the callback secret kept in
	// the database), for the caller's own redaction of logs and spans.
	OnSecret func(secret string)

	// Engine configures the node's engine: its pools (Queues), its name,
	// intervals, retention and shutdown. Its Store, Logger, Observer and
	// Tracer are the server's, and Listen is on (the remote workers'
	// long-polling claims share its wake-ups). The pools of jobd's own
	// services — the gateway, the processes, the webhook deliveries — are
	// added when those are configured, unless Queues names their queues.
	// Its durable limits (MaxSteps, MaxStepResultBytes, MaxChildren:
	// jobd serve --max-steps, --max-step-result-bytes, --max-children)
	// bound the remote workers' steps and children too. Its Clock is the
	// server's: the gateway's result TTL and the dashboard read it too.
	Engine engine.Config
	// MaxArgsBytes limits a job's args (submissions, schedule templates,
	// gateway requests); default job.DefaultMaxArgsBytes.
	MaxArgsBytes int
	// WorkflowMaxTasks bounds the tasks of a workflow (POST
	// /api/v1/workflows, and the engine's SubmitWorkflow unless
	// Engine.WorkflowMaxTasks says otherwise); default
	// job.DefaultWorkflowMaxTasks (10 000). jobd serve
	// --workflow-max-tasks.
	WorkflowMaxTasks int
	// HTTP configures the HTTP servers and the API.
	HTTP HTTPConfig
	// WorkerOfflineAfter marks remote workers without a heartbeat this
	// long offline; default remote.DefaultOfflineAfter.
	WorkerOfflineAfter time.Duration
	// Gateway is the async HTTP gateway, on when it has Upstreams.
	Gateway GatewayConfig
	// Processes are the durable processes' namespaces; none: off.
	Processes []process.Namespace
	// Schedules are the periodic jobs the configuration owns: stored at
	// start, winning over the API's schedules of their names.
	Schedules []schedule.Definition
	// Webhooks configures alerts and completion callbacks.
	Webhooks WebhookConfig
	// Metrics configures /metrics and the queue health gauges.
	Metrics MetricsConfig
	// Dashboard configures the web dashboard at /ui/.
	Dashboard DashboardConfig
}

// DashboardConfig configures the web dashboard.
type DashboardConfig struct {
	// ScanLimit is how many jobs a page of the jobs list looks at, at
	// most, whatever its filters match; default web.DefaultScanLimit.
	ScanLimit int
}

// PostgresConfig is what a PostgreSQL Database needs beyond its URL.
type PostgresConfig struct {
	// ListenURL is the URL of the node's dedicated connections (LISTEN,
	// the leader's presence lock), straight to PostgreSQL when Database
	// goes through PgBouncer in transaction mode. Default: Database's,
	// unless that goes through a pooler (then no LISTEN: workers poll).
	ListenURL string
	// Pooler is what Database reaches: postgres.PoolerAuto (default),
	// postgres.PoolerNone or postgres.PoolerTransaction.
	Pooler string
}

// HTTPConfig configures the HTTP servers (the API's and the metrics one)
// and the API's limits.
type HTTPConfig struct {
	// MaxBodyBytes limits a request's body; default DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// ReadTimeout bounds the reading of a request, headers and body;
	// default DefaultReadTimeout.
	ReadTimeout time.Duration
	// WriteTimeout bounds a request from the end of its headers to the
	// end of its answer (long-polls and streams extend their own);
	// default DefaultWriteTimeout.
	WriteTimeout time.Duration
	// IdleTimeout closes a kept-alive connection without a next request;
	// default DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxStreams, MaxStreamsPerCaller and StreamMaxAge bound the job
	// event streams; defaults httpapi's.
	MaxStreams, MaxStreamsPerCaller int
	StreamMaxAge                    time.Duration
	// StreamRecheck is how often an open stream checks that its
	// credential still holds: a stream of a revoked key or session ends
	// within it; default httpapi.DefaultStreamRecheck (5 s).
	StreamRecheck time.Duration
	// PollInterval is how often a long-poll or a stream re-reads its
	// job; default httpapi.DefaultPollInterval.
	PollInterval time.Duration
}

// Upstream is one service the async gateway stands in front of
// (/gw/NAME/…).
type Upstream = gateway.Upstream

// ParseUpstreams reads --upstream NAME=URL items (each may hold several,
// comma-separated) and --upstream-timeout items (DURATION for all, or
// NAME=DURATION).
func ParseUpstreams(items, timeouts []string) ([]Upstream, error) {
	return gateway.ParseUpstreams(items, timeouts)
}

// GatewayConfig configures the async HTTP gateway.
type GatewayConfig struct {
	// Upstreams are the services it serves; none: the gateway is off.
	Upstreams []Upstream
	// MaxPending is how many requests may be queued or running before a
	// new one is refused 503; default gateway.DefaultMaxPending.
	MaxPending int
	// Concurrency is the upstream calls this node makes at once (the
	// gateway queue's pool, unless Engine.Queues sets one); default
	// gateway.DefaultConcurrency. Negative: this node runs no pool of
	// upstream calls (they wait for a node that does).
	Concurrency int
	// ResultTTL removes an unfetched result after it; default
	// gateway.DefaultResultTTL.
	ResultTTL time.Duration
	// MaxResponseBytes fails a request whose response is larger; default
	// gateway.DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// MaxAttempts bounds the attempts of each request's upstream call
	// (a 5xx answer or a network error is tried again); default
	// job.DefaultMaxAttempts.
	MaxAttempts int
	// SweepInterval is how often the maintenance leader removes the
	// results older than ResultTTL; default gateway.DefaultSweepInterval
	// (1 minute).
	SweepInterval time.Duration
}

// Defaults of GatewayConfig.
const (
	DefaultGatewayMaxPending       = gateway.DefaultMaxPending
	DefaultGatewayConcurrency      = gateway.DefaultConcurrency
	DefaultGatewayResultTTL        = gateway.DefaultResultTTL
	DefaultGatewayMaxResponseBytes = gateway.DefaultMaxResponseBytes
)

// WebhookSubscription is an alert subscription the configuration owns
// (--webhooks).
type WebhookSubscription = webhook.ConfigWebhook

// ParseWebhooks reads the --webhooks JSON: an array of subscriptions.
// Its errors name the entry and the field, never a secret.
func ParseWebhooks(raw []byte) ([]WebhookSubscription, error) { return webhook.ParseConfig(raw) }

// CheckWebhookSecret reports whether s is a webhook secret
// (whsec_<base64>); its error never repeats s.
func CheckWebhookSecret(s string) error {
	_, err := webhook.ParseSecret(s)
	return err
}

// WebhookConfig configures alerts and completion callbacks.
type WebhookConfig struct {
	// Subscriptions are the alert subscriptions the configuration owns.
	Subscriptions []WebhookSubscription
	// CallbackSecret signs job callbacks (whsec_<base64>); default one
	// made at the first start and kept in the database.
	CallbackSecret string
	// AllowPrivate lets callbacks connect to loopback, link-local and
	// private addresses; AllowNetworks to these networks.
	AllowPrivate  bool
	AllowNetworks []netip.Prefix
	// Concurrency is the deliveries this node makes at once (the
	// jobd.webhooks queue's pool, unless Engine.Queues sets one); default
	// webhook.DefaultConcurrency. Negative: this node runs no pool of
	// deliveries (they wait for a node that does).
	Concurrency int
	// MaxAttempts, Timeout: of each delivery. AlertInterval, FailureCount,
	// FailureWindow, BacklogAge: of the alerts. Defaults webhook's.
	MaxAttempts   int
	Timeout       time.Duration
	AlertInterval time.Duration
	FailureCount  int
	FailureWindow time.Duration
	BacklogAge    time.Duration
}

// Defaults of WebhookConfig.
const (
	DefaultWebhookConcurrency = webhook.DefaultConcurrency
	DefaultWebhookMaxAttempts = webhook.DefaultMaxAttempts
	DefaultWebhookTimeout     = webhook.DefaultTimeout
	DefaultAlertInterval      = webhook.DefaultAlertInterval
	DefaultAlertFailures      = webhook.DefaultFailureCount
	DefaultAlertFailureWindow = webhook.DefaultFailureWindow
	DefaultAlertBacklogAge    = webhook.DefaultBacklogAge
)

// Defaults of the rest of Config.
const (
	DefaultQueueHealthInterval = telemetry.DefaultHealthInterval
	DefaultWorkerOfflineAfter  = remote.DefaultOfflineAfter
	DefaultMaxStreams          = httpapi.DefaultMaxStreams
	DefaultMaxStreamsPerCaller = httpapi.DefaultMaxStreamsPerCaller
	DefaultStreamMaxAge        = httpapi.DefaultStreamMaxAge
)

// MetricsConfig configures /metrics.
type MetricsConfig struct {
	// Listen also serves GET /metrics on this address (plain HTTP); it
	// is always served on Listen too.
	Listen string
	// Public serves /metrics without a credential even with an
	// AdminSecret.
	Public bool
	// HealthInterval is the refresh period of the queue health gauges;
	// default DefaultQueueHealthInterval.
	HealthInterval time.Duration
}

// withDefaults returns c with its zero fields set to the defaults.
func (c Config) withDefaults() Config {
	if c.Database == "" {
		c.Database = DefaultDatabase
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Tracer == nil {
		c.Tracer = observe.Nop{}
	}
	if c.MaxArgsBytes == 0 {
		c.MaxArgsBytes = job.DefaultMaxArgsBytes
	}
	if c.WorkflowMaxTasks == 0 {
		c.WorkflowMaxTasks = job.DefaultWorkflowMaxTasks
	}
	if c.Engine.WorkflowMaxTasks == 0 {
		c.Engine.WorkflowMaxTasks = c.WorkflowMaxTasks
	}
	setDefault(&c.HTTP.MaxBodyBytes, DefaultMaxBodyBytes)
	setDefault(&c.HTTP.ReadTimeout, DefaultReadTimeout)
	setDefault(&c.HTTP.WriteTimeout, DefaultWriteTimeout)
	setDefault(&c.HTTP.IdleTimeout, DefaultIdleTimeout)
	setDefault(&c.HTTP.MaxStreams, DefaultMaxStreams)
	setDefault(&c.HTTP.MaxStreamsPerCaller, DefaultMaxStreamsPerCaller)
	setDefault(&c.HTTP.StreamMaxAge, DefaultStreamMaxAge)
	setDefault(&c.WorkerOfflineAfter, DefaultWorkerOfflineAfter)
	setDefault(&c.Gateway.MaxPending, DefaultGatewayMaxPending)
	setDefault(&c.Gateway.Concurrency, DefaultGatewayConcurrency)
	setDefault(&c.Gateway.ResultTTL, DefaultGatewayResultTTL)
	setDefault(&c.Gateway.MaxResponseBytes, DefaultGatewayMaxResponseBytes)
	setDefault(&c.Webhooks.Concurrency, DefaultWebhookConcurrency)
	setDefault(&c.Webhooks.MaxAttempts, DefaultWebhookMaxAttempts)
	setDefault(&c.Webhooks.Timeout, DefaultWebhookTimeout)
	setDefault(&c.Webhooks.AlertInterval, DefaultAlertInterval)
	setDefault(&c.Webhooks.FailureCount, DefaultAlertFailures)
	setDefault(&c.Webhooks.FailureWindow, DefaultAlertFailureWindow)
	setDefault(&c.Webhooks.BacklogAge, DefaultAlertBacklogAge)
	setDefault(&c.Metrics.HealthInterval, DefaultQueueHealthInterval)
	if c.Postgres.Pooler == "" {
		c.Postgres.Pooler = postgres.PoolerAuto
	}
	return c
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// validate reports the first invalid setting of c (defaults applied),
// naming it as the CLI's flag does.
func (c Config) validate() error {
	if n := utf8.RuneCountInString(c.AdminSecret); c.AdminSecret != "" && n < MinAdminSecret {
		return invalid("--admin-secret (JOBD_ADMIN_SECRET) must be at least %d characters, got %d: choose a long random one (openssl rand -hex 32)", MinAdminSecret, n)
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return invalid("--tls-cert and --tls-key go together")
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{
		{"--read-timeout", c.HTTP.ReadTimeout}, {"--write-timeout", c.HTTP.WriteTimeout},
		{"--idle-timeout", c.HTTP.IdleTimeout}, {"--stream-max-age", c.HTTP.StreamMaxAge},
		{"--queue-health-interval", c.Metrics.HealthInterval},
		{"--async-result-ttl", c.Gateway.ResultTTL},
		{"--webhook-timeout", c.Webhooks.Timeout}, {"--alert-interval", c.Webhooks.AlertInterval},
		{"--alert-failure-window", c.Webhooks.FailureWindow}, {"--alert-backlog-age", c.Webhooks.BacklogAge},
	} {
		if d.v <= 0 {
			return invalid("%s must be positive", d.flag)
		}
	}
	switch {
	case c.HTTP.MaxBodyBytes < 0:
		return invalid("--max-body must be positive")
	case c.MaxArgsBytes < 0:
		return invalid("--max-args must be positive")
	case c.WorkflowMaxTasks < 0:
		return invalid("--workflow-max-tasks must be positive")
	case c.HTTP.MaxStreams <= 0:
		return invalid("--max-streams must be positive")
	case c.HTTP.MaxStreamsPerCaller <= 0:
		return invalid("--max-streams-per-key must be positive")
	case c.Gateway.MaxPending <= 0:
		return invalid("--async-max-pending must be positive")
	case c.Gateway.MaxResponseBytes <= 0:
		return invalid("--async-max-response must be positive")
	case c.Webhooks.MaxAttempts < 1:
		return invalid("--webhook-max-attempts must be at least 1")
	case c.Webhooks.FailureCount < 1:
		return invalid("--alert-failures must be at least 1")
	case c.Webhooks.Concurrency > engine.MaxConcurrency:
		return invalid("--webhook-concurrency must be between 1 and %d", engine.MaxConcurrency)
	}
	if c.Webhooks.CallbackSecret != "" {
		if err := CheckWebhookSecret(c.Webhooks.CallbackSecret); err != nil {
			return invalid("--callback-secret: %v", err)
		}
	}
	return nil
}

// invalid returns an ErrInvalidConfig error.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
}

// invalidErr marks err, a check's error, as ErrInvalidConfig.
func invalidErr(err error) error {
	if err == nil || errors.Is(err, ErrInvalidConfig) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
}

// Check reports the first invalid setting of c, as NewServer would, an
// ErrInvalidConfig error naming the setting as the CLI's flag does.
func (c Config) Check() error { return c.withDefaults().validate() }

// Secrets returns every secret c holds, which no log line may show: the
// admin secret, the database URLs' passwords, the upstreams' and the
// processors' URL credentials (and the Basic authorization made of
// them), the webhook secrets. The callback secret a server makes at its
// first start is not among them: Config.OnSecret learns it.
func (c Config) Secrets() []string {
	var out []string
	add := func(v string) {
		if v != "" {
			out = append(out, v)
		}
	}
	addURL := func(raw string, basic bool) {
		u, err := url.Parse(raw)
		if err != nil || u.User == nil {
			var one redact.Secrets // a key=value DSN's password=
			one.AddURL(raw)
			out = append(out, one.Values()...)
			return
		}
		pass, ok := u.User.Password()
		if !ok {
			return
		}
		add(pass)
		add(url.PathEscape(pass))
		if basic { // the Authorization header made of it
			add(base64.StdEncoding.EncodeToString([]byte(u.User.Username() + ":" + pass)))
		}
	}
	add(c.AdminSecret)
	addURL(c.Database, false)
	addURL(c.Postgres.ListenURL, false)
	for _, u := range c.Gateway.Upstreams {
		if u.URL != nil {
			addURL(u.URL.String(), true)
		}
	}
	for _, ns := range c.Processes {
		if hp, ok := ns.Processor.(*process.HTTPProcessor); ok {
			addURL(hp.URL, true)
		}
	}
	add(c.Webhooks.CallbackSecret)
	for _, w := range c.Webhooks.Subscriptions {
		add(w.Secret)
	}
	return out
}
