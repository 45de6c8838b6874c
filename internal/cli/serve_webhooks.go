package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/internal/buildinfo"
	"github.com/jobd/jobd/internal/redact"
	"github.com/jobd/jobd/observe"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/webhook"
)

// webhookFlags are jobd serve's flags of webhooks: alerts and callbacks.
type webhookFlags struct {
	webhooks       string // --webhooks JSON
	callbackSecret string
	allowPrivate   bool
	allowNetworks  listFlag
	maxAttempts    int
	timeout        time.Duration
	concurrency    int
	alertInterval  time.Duration
	failureCount   int
	failureWindow  time.Duration
	backlogAge     time.Duration

	// Parsed by check.
	configured []webhook.ConfigWebhook
	networks   []netip.Prefix
}

func (f *webhookFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.webhooks, "webhooks", "", `alert subscriptions owned by the configuration, as JSON [{"id":ID,"url":URL,"events":[…],"secret":"whsec_…","filter":{"queue":Q,"kind":K}}]`)
	fs.StringVar(&f.callbackSecret, "callback-secret", "", "signs job callbacks (whsec_<base64>); default one made at the first start and kept in the database (jobd webhooks callback-secret)")
	fs.BoolVar(&f.allowPrivate, "callback-allow-private", false, "let job callbacks connect to loopback, link-local and private addresses")
	fs.Var(&f.allowNetworks, "callback-allow-network", "let job callbacks connect to this CIDR network (repeatable; env JOBD_CALLBACK_ALLOW_NETWORK=a,b)")
	fs.IntVar(&f.maxAttempts, "webhook-max-attempts", webhook.DefaultMaxAttempts, "attempts of each webhook delivery (retries with the jobd.webhooks queue's backoff)")
	fs.DurationVar(&f.timeout, "webhook-timeout", webhook.DefaultTimeout, "timeout of each webhook delivery attempt")
	fs.IntVar(&f.concurrency, "webhook-concurrency", webhook.DefaultConcurrency, "webhook deliveries this node makes at once (the jobd.webhooks queue's worker pool)")
	fs.DurationVar(&f.alertInterval, "alert-interval", webhook.DefaultAlertInterval, "at most one alert per type, subscription and queue in this interval; the next one counts those suppressed")
	fs.IntVar(&f.failureCount, "alert-failures", webhook.DefaultFailureCount, "failure.pattern: this many jobs of one queue and kind failed within --alert-failure-window")
	fs.DurationVar(&f.failureWindow, "alert-failure-window", webhook.DefaultFailureWindow, "failure.pattern: the window of --alert-failures")
	fs.DurationVar(&f.backlogAge, "alert-backlog-age", webhook.DefaultBacklogAge, "queue.backlog: the oldest due job of a queue has waited this long")
}

// check parses and checks the flags; its errors never repeat a secret.
func (f *webhookFlags) check() error {
	if f.webhooks != "" {
		var err error
		if f.configured, err = webhook.ParseConfig([]byte(f.webhooks)); err != nil {
			return fmt.Errorf("--webhooks: %w", err)
		}
	}
	if f.callbackSecret != "" {
		if _, err := webhook.ParseSecret(f.callbackSecret); err != nil {
			return fmt.Errorf("--callback-secret: %w", err)
		}
	}
	for _, item := range f.allowNetworks {
		for _, v := range strings.Split(item, ",") {
			if v = strings.TrimSpace(v); v == "" {
				continue
			}
			p, err := netip.ParsePrefix(v)
			if err != nil {
				return fmt.Errorf("--callback-allow-network: %w", err)
			}
			f.networks = append(f.networks, p.Masked())
		}
	}
	switch {
	case f.maxAttempts < 1:
		return errors.New("--webhook-max-attempts must be at least 1")
	case f.timeout <= 0, f.alertInterval <= 0, f.failureWindow <= 0, f.backlogAge <= 0:
		return errors.New("--webhook-timeout, --alert-interval, --alert-failure-window and --alert-backlog-age must be positive")
	case f.failureCount < 1:
		return errors.New("--alert-failures must be at least 1")
	case f.concurrency < 1 || f.concurrency > engine.MaxConcurrency:
		return fmt.Errorf("--webhook-concurrency must be between 1 and %d", engine.MaxConcurrency)
	}
	return nil
}

// addSecrets adds the webhook secrets of the configuration to s, for the
// logs to mask.
func (f *webhookFlags) addSecrets(s *redact.Secrets) {
	s.Add(f.callbackSecret)
	for _, c := range f.configured {
		s.Add(c.Secret)
	}
}

// queue adds the deliveries' worker pool to queues unless --workers
// configures one already.
func (f *webhookFlags) queue(queues []engine.QueueConfig) []engine.QueueConfig {
	for _, q := range queues {
		if q.Queue == webhook.Queue {
			return queues
		}
	}
	return append(queues, engine.QueueConfig{Queue: webhook.Queue, Concurrency: f.concurrency, Backoff: webhook.DefaultBackoff})
}

// start makes the node's webhook service on eng: the callback secret
// (given, or kept in st, made at the first start), the configuration's
// subscriptions written to st.
func (f *webhookFlags) start(ctx context.Context, st store.Store, eng *engine.Engine, logger *slog.Logger,
	secrets *redact.Secrets, obs observe.Webhooks) (*webhook.Service, error) {
	secret, err := webhook.CallbackSecret(ctx, st, f.callbackSecret)
	if err != nil {
		return nil, err
	}
	secrets.Add(secret)
	svc, err := webhook.New(webhook.Config{
		Store: st, Engine: eng, CallbackSecret: secret, Logger: logger, Observer: obs,
		Guard:       webhook.Guard{AllowPrivate: f.allowPrivate, AllowNetworks: f.networks},
		MaxAttempts: f.maxAttempts, Timeout: f.timeout, AlertInterval: f.alertInterval,
		FailureCount: f.failureCount, FailureWindow: f.failureWindow, BacklogAge: f.backlogAge,
		UserAgent: "jobd-webhooks/" + buildinfo.Version(),
	})
	if err != nil {
		return nil, err
	}
	if err := svc.Configure(ctx, f.configured); err != nil {
		return nil, fmt.Errorf("--webhooks: %w", err)
	}
	if len(f.configured) > 0 {
		logger.Info("webhooks configured", "subscriptions", len(f.configured))
	}
	return svc, nil
}
