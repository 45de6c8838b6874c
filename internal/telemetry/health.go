package telemetry

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/store"
)

// DefaultHealthInterval is how often the queue health snapshot is
// refreshed.
const DefaultHealthInterval = 5 * time.Second

// HealthSource reads the cluster's queue health and the queues'
// settings (flow control, throttles); a store.Store is one.
type HealthSource interface {
	QueueHealth(ctx context.Context, params store.HealthParams) (*store.Health, error)
	QueueSettings(ctx context.Context) ([]store.QueueSettings, error)
}

// HealthConfig configures a Health.
type HealthConfig struct {
	// Source is read once per Interval. Required.
	Source HealthSource
	// Interval between two refreshes; default DefaultHealthInterval.
	Interval time.Duration
	// Params bounds each read.
	Params store.HealthParams
	// Clock defaults to clock.Real; Logger to slog.Default().
	Clock  clock.Clock
	Logger *slog.Logger
}

// Health is the queue health snapshot: two store reads (QueueHealth and
// the queues' settings) per refresh, served to every scrape in between,
// so that a scrape costs no query whoever scrapes and how often. Its
// gauges are cluster-wide: the same on every node, whichever node did
// the work.
type Health struct {
	cfg     HealthConfig
	gateway string

	mu       sync.Mutex
	snap     *store.Health
	settings []store.QueueSettings // of snap's refresh
	takenAt  time.Time             // by the local clock
	took     time.Duration
	// seen holds the queues reported before, reported at zero once they
	// have no active job left, so that their series do not vanish;
	// seenFlow likewise the queues that had flow control or a throttle.
	seen, seenFlow map[string]bool

	errors prometheus.Counter
}

// WatchHealth registers the queue health gauges of cfg.Source with m and
// returns the snapshot to refresh (Run, or Refresh).
func (m *Metrics) WatchHealth(cfg HealthConfig) *Health {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultHealthInterval
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Params = cfg.Params.WithDefaults()
	h := &Health{cfg: cfg, gateway: m.cfg.GatewayQueue, seen: make(map[string]bool), seenFlow: make(map[string]bool),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "jobd_queue_health_refresh_errors_total",
			Help: "Refreshes of the queue health snapshot that failed (the last snapshot is kept)."})}
	m.reg.MustRegister(h, h.errors)
	return h
}

// Run refreshes the snapshot every Interval until ctx ends.
func (h *Health) Run(ctx context.Context) {
	t := h.cfg.Clock.NewTimer(0)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		err := h.Refresh(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && !failing:
			failing = true
			h.cfg.Logger.Warn("telemetry: queue health refresh failing; keeping the last snapshot", "err", err)
		case err == nil && failing:
			failing = false
			h.cfg.Logger.Info("telemetry: queue health refresh recovered")
		}
		t.Reset(h.cfg.Interval)
	}
}

// Refresh reads the store once and replaces the snapshot.
func (h *Health) Refresh(ctx context.Context) error {
	began := h.cfg.Clock.Now()
	cctx, cancel := context.WithTimeout(ctx, max(h.cfg.Interval, 10*time.Second))
	defer cancel()
	snap, err := h.cfg.Source.QueueHealth(cctx, h.cfg.Params)
	if err != nil {
		h.errors.Inc()
		return err
	}
	settings, err := h.cfg.Source.QueueSettings(cctx)
	if err != nil {
		h.errors.Inc()
		return err
	}
	now := h.cfg.Clock.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.snap, h.settings, h.takenAt, h.took = snap, flowSettings(settings, h.cfg.Params.MaxQueues), now, now.Sub(began)
	for _, q := range snap.Queues {
		if len(h.seen) < h.cfg.Params.MaxQueues {
			h.seen[q.Queue] = true
		}
	}
	for _, q := range h.settings {
		if len(h.seenFlow) < h.cfg.Params.MaxQueues {
			h.seenFlow[q.Name] = true
		}
	}
	return nil
}

// flowSettings keeps, of all, the queues that have flow control or a
// throttle, at most limit of them.
func flowSettings(all []store.QueueSettings, limit int) []store.QueueSettings {
	var out []store.QueueSettings
	for _, q := range all {
		if len(out) == limit {
			break
		}
		if q.Limits.Limited() || q.ThrottledUntil != nil || len(q.Throttled) > 0 {
			out = append(out, q)
		}
	}
	return out
}

// Snapshot returns the last snapshot and when it was taken (by the
// local clock); nil before the first refresh. The caller must not change
// it.
func (h *Health) Snapshot() (*store.Health, time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.snap, h.takenAt
}

var (
	queueJobs = prometheus.NewDesc("jobd_queue_jobs",
		"Active jobs of each queue by state (queued, due or not; running), cluster-wide.", []string{"queue", "state"}, nil)
	queueScheduled = prometheus.NewDesc("jobd_queue_scheduled_jobs",
		"Queued jobs of each queue not due yet (run_at in the future), cluster-wide.", []string{"queue"}, nil)
	queueOldest = prometheus.NewDesc("jobd_queue_oldest_available_age_seconds",
		"How long the oldest due job of each queue has waited since its run_at (0 when none is due), cluster-wide.", []string{"queue"}, nil)
	queueBlocked = prometheus.NewDesc("jobd_queue_lock_blocked_jobs",
		"Due jobs of each queue waiting for a lock_key a running job holds (counted among the queue's first due jobs with a lock_key).", []string{"queue"}, nil)
	queuePaused = prometheus.NewDesc("jobd_queue_paused",
		"1 for a paused queue, else 0.", []string{"queue"}, nil)
	workersDesc = prometheus.NewDesc("jobd_workers",
		"Remote workers by status (active, idle, busy, offline; disabled ones as disabled), cluster-wide.", []string{"status"}, nil)
	gatewayPending = prometheus.NewDesc("jobd_gateway_pending_requests",
		"Async gateway requests queued or running (results pending), cluster-wide.", nil, nil)
	queueThrottledUntil = prometheus.NewDesc("jobd_queue_throttled_until_seconds",
		"When the throttle of each queue as a whole ends, as a Unix time; 0 when it has none.", []string{"queue"}, nil)
	queueThrottledPartitions = prometheus.NewDesc("jobd_queue_throttled_partitions",
		"Partitions of each queue under a throttle of their own (throttle_by partition_key), at most 100 counted.", []string{"queue"}, nil)
	queueGlobalLimit = prometheus.NewDesc("jobd_queue_global_limit",
		"The global_limit of each queue: its most running jobs across every node; 0 for none.", []string{"queue"}, nil)
	queuePartitionLimit = prometheus.NewDesc("jobd_queue_partition_limit",
		"The partition_limit of each queue: its most running jobs per partition_key; 0 for none.", []string{"queue"}, nil)
	queueRateLimit = prometheus.NewDesc("jobd_queue_rate_limit_per_second",
		"The rate of each queue, in job starts per second (per partition_key when its rate is by partition); 0 for none.", []string{"queue"}, nil)
	healthAge = prometheus.NewDesc("jobd_queue_health_age_seconds",
		"Age of the queue health snapshot the queue gauges come from.", nil, nil)
	healthTook = prometheus.NewDesc("jobd_queue_health_refresh_duration_seconds",
		"Duration of the last refresh of the queue health snapshot (one store query).", nil, nil)
)

// Describe sends the snapshot's descriptions.
func (h *Health) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{queueJobs, queueScheduled, queueOldest, queueBlocked, queuePaused,
		queueThrottledUntil, queueThrottledPartitions, queueGlobalLimit, queuePartitionLimit, queueRateLimit,
		workersDesc, gatewayPending, healthAge, healthTook} {
		ch <- d
	}
}

// Collect sends the snapshot's gauges; none before the first refresh.
func (h *Health) Collect(ch chan<- prometheus.Metric) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.snap == nil {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	since := h.cfg.Clock.Now().Sub(h.takenAt)
	reported := make(map[string]bool, len(h.snap.Queues))
	var pending int64
	for _, q := range h.snap.Queues {
		reported[q.Queue] = true
		gauge(queueJobs, float64(q.Queued), q.Queue, "queued")
		gauge(queueJobs, float64(q.Running), q.Queue, "running")
		gauge(queueScheduled, float64(q.Scheduled), q.Queue)
		age := 0.0
		if q.OldestAvailable != nil {
			// The age at the snapshot, by the store's clock, plus the time
			// since by ours: no clock skew between them counts.
			age = max(h.snap.At.Sub(*q.OldestAvailable)+since, 0).Seconds()
		}
		gauge(queueOldest, age, q.Queue)
		gauge(queueBlocked, float64(q.LockBlocked), q.Queue)
		paused := 0.0
		if q.Paused {
			paused = 1
		}
		gauge(queuePaused, paused, q.Queue)
		if q.Queue == h.gateway {
			pending = q.Queued + q.Running
		}
	}
	for name := range h.seen {
		if !reported[name] {
			gauge(queueJobs, 0, name, "queued")
			gauge(queueJobs, 0, name, "running")
			gauge(queueScheduled, 0, name)
			gauge(queueOldest, 0, name)
			gauge(queueBlocked, 0, name)
			gauge(queuePaused, 0, name)
		}
	}
	h.collectFlow(gauge)
	workers := map[string]int64{"active": 0, "idle": 0, "busy": 0, "offline": 0, "disabled": 0}
	for _, w := range h.snap.Workers {
		status := string(w.Status)
		if w.Disabled {
			status = "disabled"
		}
		workers[status] += w.Count
	}
	for status, n := range workers {
		gauge(workersDesc, float64(n), status)
	}
	if h.gateway != "" {
		gauge(gatewayPending, float64(pending))
	}
	gauge(healthAge, since.Seconds())
	gauge(healthTook, h.took.Seconds())
}

// collectFlow sends the flow-control gauges of the snapshot's settings,
// and zeros for the queues that had some before; h.mu is held.
func (h *Health) collectFlow(gauge func(d *prometheus.Desc, v float64, labels ...string)) {
	reported := make(map[string]bool, len(h.settings))
	for _, q := range h.settings {
		reported[q.Name] = true
		until := 0.0
		if q.ThrottledUntil != nil {
			until = float64(q.ThrottledUntil.UnixMilli()) / 1000
		}
		gauge(queueThrottledUntil, until, q.Name)
		gauge(queueThrottledPartitions, float64(len(q.Throttled)), q.Name)
		gauge(queueGlobalLimit, float64(q.Limits.GlobalLimit), q.Name)
		gauge(queuePartitionLimit, float64(q.Limits.PartitionLimit), q.Name)
		rate := 0.0
		if r := q.Limits.Rate; r != nil {
			rate = float64(r.Limit) / r.Period.Seconds()
		}
		gauge(queueRateLimit, rate, q.Name)
	}
	for name := range h.seenFlow {
		if !reported[name] {
			for _, d := range []*prometheus.Desc{queueThrottledUntil, queueThrottledPartitions, queueGlobalLimit, queuePartitionLimit, queueRateLimit} {
				gauge(d, 0, name)
			}
		}
	}
}
