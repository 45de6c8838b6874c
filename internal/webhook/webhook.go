package webhook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/observe"
	"github.com/jobd/jobd/store"
)

// The queue and kind of the deliveries.
const (
	Queue = "jobd.webhooks"
	Kind  = "jobd.webhook"
)

// The maintenance duties of package webhook.
const (
	// DutyDispatch turns the store's outbox into deliveries, on every
	// node.
	DutyDispatch = "webhook-dispatch"
	// DutyAlerts checks the level alerts (queue.backlog), on the leader.
	DutyAlerts = "webhook-alerts"
)

// CallbackSecretSetting names the store setting that keeps the callback
// secret made at a server's first start.
const CallbackSecretSetting = "callback_secret"

// Defaults of Config.
const (
	DefaultMaxAttempts      = 20
	DefaultTimeout          = 10 * time.Second
	DefaultAlertInterval    = time.Minute
	DefaultFailureCount     = 5
	DefaultFailureWindow    = 10 * time.Minute
	DefaultBacklogAge       = 5 * time.Minute
	DefaultBacklogInterval  = 30 * time.Second
	DefaultDispatchInterval = time.Second
	// DefaultConcurrency is the worker pool a server gives Queue unless
	// configured otherwise.
	DefaultConcurrency = 8
)

// DefaultBackoff is the retry policy a server gives Queue: 10 s doubling
// up to an hour, so that the default 20 attempts span about 12 hours (a
// receiver down for an hour loses nothing).
var DefaultBackoff = engine.Backoff{Kind: engine.BackoffExponential, Base: 10 * time.Second, Max: time.Hour, Jitter: 0.2}

// Config configures a Service. Zero fields take the documented defaults.
type Config struct {
	// Store is the database. Required.
	Store store.Store
	// Engine works the deliveries: New registers Kind on it and adds the
	// duties. It needs a worker pool for Queue (see DefaultConcurrency,
	// DefaultBackoff). Required.
	Engine *engine.Engine
	// CallbackSecret signs the callbacks, in its "whsec_" form. Required
	// (see CallbackSecret to make and keep one).
	CallbackSecret string
	// Guard decides where callbacks may connect (public addresses only,
	// by default).
	Guard Guard
	// MaxAttempts of each delivery; default 20.
	MaxAttempts int
	// Timeout of each attempt; default 10 s.
	Timeout time.Duration
	// AlertInterval is the rate limit of each alert type per subscription
	// and key: at most one alert per interval; default 1 minute.
	AlertInterval time.Duration
	// FailureCount failures of one queue and kind within FailureWindow
	// make a failure.pattern alert; defaults 5 and 10 minutes.
	FailureCount  int
	FailureWindow time.Duration
	// BacklogAge is the age of a queue's oldest due job beyond which a
	// queue.backlog alert goes out, checked every BacklogInterval by the
	// maintenance leader; defaults 5 minutes and 30 s.
	BacklogAge      time.Duration
	BacklogInterval time.Duration
	// DispatchInterval is how often each node looks at the outbox; default
	// 1 s.
	DispatchInterval time.Duration
	// Transport makes the subscriptions' calls (not the callbacks'); a
	// clone of http.DefaultTransport by default.
	Transport http.RoundTripper
	// UserAgent of the deliveries; default "jobd-webhooks".
	UserAgent string
	// Logger defaults to slog.Default(). It never sees a secret.
	Logger *slog.Logger
	// Clock defaults to clock.Real; it times the attempts' signatures,
	// the rate limits and the level alerts.
	Clock clock.Clock
	// Observer records the deliveries; default observe.Nop.
	Observer observe.Webhooks
	// Workflows records the workflows' ends, as the dispatcher takes
	// their events from the outbox (once in the cluster); default
	// observe.Nop.
	Workflows observe.Workflows
}

func (c Config) withDefaults() Config {
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.AlertInterval == 0 {
		c.AlertInterval = DefaultAlertInterval
	}
	if c.FailureCount == 0 {
		c.FailureCount = DefaultFailureCount
	}
	if c.FailureWindow == 0 {
		c.FailureWindow = DefaultFailureWindow
	}
	if c.BacklogAge == 0 {
		c.BacklogAge = DefaultBacklogAge
	}
	if c.BacklogInterval == 0 {
		c.BacklogInterval = DefaultBacklogInterval
	}
	if c.DispatchInterval == 0 {
		c.DispatchInterval = DefaultDispatchInterval
	}
	if c.Transport == nil {
		c.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	if c.UserAgent == "" {
		c.UserAgent = "jobd-webhooks"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = clock.Real
	}
	if c.Observer == nil {
		c.Observer = observe.Nop{}
	}
	if c.Workflows == nil {
		c.Workflows = observe.Nop{}
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Store == nil:
		return errors.New("webhook: Config.Store is required")
	case c.Engine == nil:
		return errors.New("webhook: Config.Engine is required")
	case c.MaxAttempts < 0 || c.MaxAttempts > job.MaxMaxAttempts:
		return fmt.Errorf("webhook: Config.MaxAttempts must be between 1 and %d", job.MaxMaxAttempts)
	case c.Timeout < 0, c.AlertInterval < 0, c.FailureWindow < 0, c.BacklogAge < 0, c.BacklogInterval < 0, c.DispatchInterval < 0:
		return errors.New("webhook: Config durations must not be negative")
	case c.FailureCount < 0:
		return errors.New("webhook: Config.FailureCount must not be negative")
	}
	if _, err := ParseSecret(c.CallbackSecret); err != nil {
		return fmt.Errorf("webhook: Config.CallbackSecret: %w", err)
	}
	return nil
}

// Service is the webhooks of one node: the subscriptions' management, the
// dispatcher, the level alerts and the delivery handler. Create it with
// New before the engine runs.
type Service struct {
	cfg   Config
	store store.Store
	log   *slog.Logger
	clock clock.Clock
	obs   observe.Webhooks

	callbackKey []byte
	open        *http.Client // the subscriptions': anywhere
	guarded     *http.Client // the callbacks': public addresses only

	// flushed is when the dispatcher last looked for due counts of
	// suppressed alerts; its loop is the only one to use it.
	flushed time.Time

	points Points
}

// Points are where a Service reports what its tests wait for
// (observe.Point): inert unless something attaches to them, as the tests
// do (internal/testutil/testsignal).
type Points struct {
	// Dispatched reports after each dispatch pass with the deliveries it
	// queued.
	Dispatched observe.Point[int]
	// Delivered reports after each attempt of a delivery with its outcome
	// (one of the observe.Webhook… outcomes).
	Delivered observe.Point[string]
}

// Points returns the service's points, for a watcher to attach to.
func (s *Service) Points() *Points { return &s.points }

// New checks cfg, registers the delivery handler (Kind) on cfg.Engine,
// adds the dispatcher (every node) and the level alerts (the leader) to
// its duties, and returns the service.
func New(cfg Config) (*Service, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	key, _ := ParseSecret(cfg.CallbackSecret)
	s := &Service{
		cfg: cfg, store: cfg.Store, log: cfg.Logger, clock: cfg.Clock, obs: cfg.Observer,
		callbackKey: key,
		open:        &http.Client{Transport: cfg.Transport, CheckRedirect: checkRedirect},
		guarded:     &http.Client{Transport: guardedTransport(cfg.Guard), CheckRedirect: checkRedirect},
	}
	duties := []engine.Duty{
		{Name: DutyDispatch, Interval: cfg.DispatchInterval, Pass: s.dispatch},
		{Name: DutyAlerts, Interval: cfg.BacklogInterval, Leader: true, Pass: s.checkBacklog},
	}
	for _, d := range duties {
		if err := cfg.Engine.AddDuty(d); err != nil {
			return nil, fmt.Errorf("webhook: %w", err)
		}
	}
	engine.Register(cfg.Engine, Kind, s.deliver)
	return s, nil
}

// CallbackSecret returns the callback secret a server signs with: given,
// when it is not empty (checked), else the one kept in st, made and kept
// at the first call on st (of concurrent first calls, on any node, one
// wins and all get its secret).
func CallbackSecret(ctx context.Context, st store.Store, given string) (string, error) {
	if given != "" {
		if _, err := ParseSecret(given); err != nil {
			return "", fmt.Errorf("callback secret: %w", err)
		}
		return given, nil
	}
	fresh, err := NewSecret()
	if err != nil {
		return "", err
	}
	kept, err := st.SettingInit(ctx, CallbackSecretSetting, fresh)
	if err != nil {
		return "", fmt.Errorf("callback secret: %w", err)
	}
	return kept, nil
}

// guardedTransport is the callbacks' transport: no proxy (a proxy would
// connect for them, unguarded), and a dialer that refuses what g refuses.
func guardedTransport(g Guard) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: g.control}
	t.DialContext = dialer.DialContext
	return t
}

// maxRedirects bounds the redirects a delivery follows.
const maxRedirects = 5

// errRedirect marks a redirect a delivery does not follow.
var errRedirect = errors.New("redirect not followed")

// checkRedirect follows the redirects that keep a POST a POST, with its
// body (307 and 308), up to maxRedirects; a callback's connection to each
// new address is guarded like the first.
func checkRedirect(req *http.Request, via []*http.Request) error {
	switch {
	case len(via) >= maxRedirects:
		return fmt.Errorf("%w: more than %d redirects", errRedirect, maxRedirects)
	case req.Method != via[0].Method:
		return fmt.Errorf("%w: the receiver redirected with %d, which would turn the POST into a %s; only 307 and 308 are followed",
			errRedirect, req.Response.StatusCode, req.Method)
	}
	return nil
}
