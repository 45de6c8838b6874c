package cli

import (
	"flag"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/jobd/jobd"
	"github.com/jobd/jobd/engine"
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
}

func (f *webhookFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.webhooks, "webhooks", "", `alert subscriptions owned by the configuration, as JSON [{"id":ID,"url":URL,"events":[…],"secret":"whsec_…","filter":{"queue":Q,"kind":K}}]`)
	fs.StringVar(&f.callbackSecret, "callback-secret", "", "signs job callbacks (whsec_<base64>); default one made at the first start and kept in the database (jobd webhooks callback-secret)")
	fs.BoolVar(&f.allowPrivate, "callback-allow-private", false, "let job callbacks connect to loopback, link-local and private addresses")
	fs.Var(&f.allowNetworks, "callback-allow-network", "let job callbacks connect to this CIDR network (repeatable; env JOBD_CALLBACK_ALLOW_NETWORK=a,b)")
	fs.IntVar(&f.maxAttempts, "webhook-max-attempts", jobd.DefaultWebhookMaxAttempts, "attempts of each webhook delivery (retries with the jobd.webhooks queue's backoff)")
	fs.DurationVar(&f.timeout, "webhook-timeout", jobd.DefaultWebhookTimeout, "timeout of each webhook delivery attempt")
	fs.IntVar(&f.concurrency, "webhook-concurrency", jobd.DefaultWebhookConcurrency, "webhook deliveries this node makes at once (the jobd.webhooks queue's worker pool)")
	fs.DurationVar(&f.alertInterval, "alert-interval", jobd.DefaultAlertInterval, "at most one alert per type, subscription and queue in this interval; the next one counts those suppressed")
	fs.IntVar(&f.failureCount, "alert-failures", jobd.DefaultAlertFailures, "failure.pattern: this many jobs of one queue and kind failed within --alert-failure-window")
	fs.DurationVar(&f.failureWindow, "alert-failure-window", jobd.DefaultAlertFailureWindow, "failure.pattern: the window of --alert-failures")
	fs.DurationVar(&f.backlogAge, "alert-backlog-age", jobd.DefaultAlertBacklogAge, "queue.backlog: the oldest due job of a queue has waited this long")
}

// config parses the flags into the server's webhook configuration; its
// errors never repeat a secret. The limits are checked by jobd.Config.
func (f *webhookFlags) config() (jobd.WebhookConfig, error) {
	var subs []jobd.WebhookSubscription
	if f.webhooks != "" {
		var err error
		if subs, err = jobd.ParseWebhooks([]byte(f.webhooks)); err != nil {
			return jobd.WebhookConfig{}, fmt.Errorf("--webhooks: %w", err)
		}
	}
	var networks []netip.Prefix
	for _, item := range f.allowNetworks {
		for _, v := range strings.Split(item, ",") {
			if v = strings.TrimSpace(v); v == "" {
				continue
			}
			p, err := netip.ParsePrefix(v)
			if err != nil {
				return jobd.WebhookConfig{}, fmt.Errorf("--callback-allow-network: %w", err)
			}
			networks = append(networks, p.Masked())
		}
	}
	if f.concurrency < 1 || f.concurrency > engine.MaxConcurrency {
		return jobd.WebhookConfig{}, fmt.Errorf("--webhook-concurrency must be between 1 and %d", engine.MaxConcurrency)
	}
	return jobd.WebhookConfig{
		Subscriptions: subs, CallbackSecret: f.callbackSecret,
		AllowPrivate: f.allowPrivate, AllowNetworks: networks, Concurrency: f.concurrency,
		MaxAttempts: f.maxAttempts, Timeout: f.timeout, AlertInterval: f.alertInterval,
		FailureCount: f.failureCount, FailureWindow: f.failureWindow, BacklogAge: f.backlogAge,
	}, nil
}
