// Package telemetry implements the observe interfaces with Prometheus
// (metrics, served by Handler) and OpenTelemetry (traces, Tracer). It is
// the only package of jobd that imports those libraries; the engine, the
// API, the gateway and processes see only package observe, and the store
// neither.
package telemetry

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/jobd/jobd/observe"
	"github.com/jobd/jobd/store"
)

// MaxKindSeries caps the (queue, kind) pairs the job metrics keep series
// for: kinds come from submitters, and a label must stay bounded. Pairs
// beyond it are counted under kind "other".
const MaxKindSeries = 500

// otherKind is the kind label of the pairs beyond MaxKindSeries.
const otherKind = "other"

// Buckets of the histograms.
var (
	// latencyBuckets suit waits and runs: 1 ms to about 1 hour.
	latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}
	// callBuckets suit database and HTTP calls: 0.5 ms to 30 s.
	callBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
	// batchBuckets suit batch sizes: 1 to 1000.
	batchBuckets = []float64{1, 2, 5, 10, 25, 50, 100, 250, 500, 1000}
)

// Config configures Metrics.
type Config struct {
	// Version is reported by jobd_build_info.
	Version string
	// Pools reports the store's connection pools (store.PoolReporter);
	// nil reports none.
	Pools store.PoolReporter
	// Leading reports whether this node leads maintenance; nil reports
	// jobd_maintenance_leader 0.
	Leading func() bool
	// ProcessQueue is the queue of durable processes' tasks: its claims
	// are also the process scanning stage. "" for none.
	ProcessQueue string
	// GatewayQueue is the async gateway's queue: its queued and running
	// jobs are jobd_gateway_pending_requests. "" for none.
	GatewayQueue string
}

// Metrics is jobd's Prometheus registry, and the recorder of the observe
// interfaces Jobs, HTTP, Gateway and Process. Create it with NewMetrics.
type Metrics struct {
	cfg Config
	reg *prometheus.Registry

	claimed      *prometheus.CounterVec
	finished     *prometheus.CounterVec
	wait, run    *prometheus.HistogramVec
	rescued      prometheus.Counter
	timedOut     prometheus.Counter
	throttles    *prometheus.CounterVec
	abandoned    *prometheus.CounterVec
	claimSeconds *prometheus.HistogramVec
	heartbeats   prometheus.Histogram
	finishes     prometheus.Histogram
	finishTook   prometheus.Histogram

	httpRequests *prometheus.CounterVec
	httpSeconds  *prometheus.HistogramVec
	subscribers  prometheus.Gauge

	webhookAttempts *prometheus.CounterVec
	webhookSeconds  *prometheus.HistogramVec

	upstreamCalls   *prometheus.CounterVec
	upstreamSeconds *prometheus.HistogramVec

	stages []prometheus.Histogram // by observe.Stage

	kmu       sync.Mutex
	kinds     map[[2]string]*kindRecorder
	workflows *workflowMetrics // its names under kmu
}

var (
	_ observe.Jobs     = (*Metrics)(nil)
	_ observe.HTTP     = (*Metrics)(nil)
	_ observe.Gateway  = (*Metrics)(nil)
	_ observe.Process  = (*Metrics)(nil)
	_ observe.Webhooks = (*Metrics)(nil)
)

// NewMetrics returns a registry with jobd's metrics, Go's runtime
// metrics and the process's.
func NewMetrics(cfg Config) *Metrics {
	m := &Metrics{cfg: cfg, reg: prometheus.NewRegistry(), kinds: make(map[[2]string]*kindRecorder)}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	build := prometheus.NewGauge(prometheus.GaugeOpts{Name: "jobd_build_info", Help: "Always 1; its label is the version of jobd this node runs.",
		ConstLabels: prometheus.Labels{"version": cfg.Version}})
	build.Set(1)
	f(build)

	m.claimed = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "jobd_jobs_claimed_total",
		Help: "Jobs this node claimed (its engine, and the remote workers it serves), by queue and kind."}, []string{"queue", "kind"})
	m.finished = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "jobd_jobs_finished_total",
		Help: "Executions whose outcome this node wrote, by queue, kind and outcome (succeeded, retried, failed, canceled, released, lease_lost)."},
		[]string{"queue", "kind", "outcome"})
	m.wait = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "jobd_job_wait_seconds",
		Help: "Time from a job becoming available (its run_at) to its start on this node, by queue and kind.", Buckets: latencyBuckets},
		[]string{"queue", "kind"})
	m.run = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "jobd_job_run_seconds",
		Help: "Run time of executions, from the claim to the handler's (or remote worker's) outcome, by queue and kind.", Buckets: latencyBuckets},
		[]string{"queue", "kind"})
	m.rescued = prometheus.NewCounter(prometheus.CounterOpts{Name: "jobd_jobs_rescued_total",
		Help: "Running jobs whose lease expired that this node's reaper took back (to queued, failed or canceled)."})
	m.timedOut = prometheus.NewCounter(prometheus.CounterOpts{Name: "jobd_jobs_timed_out_total",
		Help: "Running jobs whose attempt passed its deadline that this node's reaper ended (to queued, failed or canceled)."})
	m.throttles = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "jobd_job_throttles_total",
		Help: "Throttles reported by the jobs of each queue whose outcome this node wrote: the downstream was overloaded, the job went back to its queue, and the queue or its partition is throttled."},
		[]string{"queue"})
	m.abandoned = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "jobd_handlers_abandoned_total",
		Help: "Handlers of this node's engine still running past their job's deadline and the grace, no longer counted against their pool, by queue and kind."},
		[]string{"queue", "kind"})
	m.claimSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "jobd_claim_duration_seconds",
		Help: "Duration of this node's engine's claims, by queue.", Buckets: callBuckets}, []string{"queue"})
	m.heartbeats = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "jobd_heartbeat_batch_leases",
		Help: "Leases renewed per heartbeat call of this node's engine.", Buckets: batchBuckets})
	m.finishes = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "jobd_finish_batch_outcomes",
		Help: "Outcomes written per finish call of this node's engine.", Buckets: batchBuckets})
	m.finishTook = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "jobd_finish_duration_seconds",
		Help: "Duration of this node's engine's finish calls.", Buckets: callBuckets})
	f(m.claimed)
	f(m.finished)
	f(m.wait)
	f(m.run)
	f(m.rescued)
	f(m.timedOut)
	f(m.throttles)
	f(m.abandoned)
	f(m.claimSeconds)
	f(m.heartbeats)
	f(m.finishes)
	f(m.finishTook)

	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "jobd_http_requests_total",
		Help: "HTTP requests answered, by route pattern, method and status code."}, []string{"route", "method", "code"})
	m.httpSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "jobd_http_request_duration_seconds",
		Help: "Duration of HTTP requests, by route pattern and method.", Buckets: callBuckets}, []string{"route", "method"})
	m.subscribers = prometheus.NewGauge(prometheus.GaugeOpts{Name: "jobd_sse_subscribers",
		Help: "Open Server-Sent Events streams of jobs."})
	f(m.httpRequests)
	f(m.httpSeconds)
	f(m.subscribers)

	m.upstreamCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "jobd_gateway_upstream_calls_total",
		Help: "Calls of the async gateway to its upstreams, by upstream and status class (2xx...5xx, error when no answer came)."},
		[]string{"upstream", "status_class"})
	m.upstreamSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "jobd_gateway_upstream_call_duration_seconds",
		Help: "Duration of the async gateway's upstream calls (to the response's headers), by upstream.", Buckets: latencyBuckets},
		[]string{"upstream"})
	f(m.upstreamCalls)
	f(m.upstreamSeconds)

	m.webhookAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "jobd_webhook_attempts_total",
		Help: "Attempts of webhook deliveries (alerts, callbacks, pings) this node made, by event type and outcome (delivered, retried, failed, refused, skipped)."},
		[]string{"event", "outcome"})
	m.webhookSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "jobd_webhook_attempt_duration_seconds",
		Help: "Duration of the attempts of webhook deliveries, by event type.", Buckets: callBuckets}, []string{"event"})
	f(m.webhookAttempts)
	f(m.webhookSeconds)

	m.stages = make([]prometheus.Histogram, len(observe.Stages))
	for _, s := range observe.Stages {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "jobd_process_" + s.String() + "_seconds",
			Help: stageHelp[s], Buckets: callBuckets})
		m.stages[s] = h
		f(h)
	}
	m.workflows = newWorkflowMetrics(f)
	if cfg.Pools != nil {
		f(poolCollector{cfg.Pools})
	}
	f(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "jobd_maintenance_leader",
		Help: "1 while this node leads maintenance (the reaper, the retention, the worker sweep), else 0."},
		func() float64 {
			if cfg.Leading != nil && cfg.Leading() {
				return 1
			}
			return 0
		}))
	return m
}

// stageHelp describes each process stage's histogram, with the
// progressor histogram it stands for.
var stageHelp = map[observe.Stage]string{
	observe.StageScanning:         "Claims of the process tasks' queue, calls and timers alike (progressor_calls_scanning, progressor_timers_scanning).",
	observe.StageZombieCollection: "Marking in error the process of a task whose node died mid-call (progressor_zombie_collection).",
	observe.StageRequestPreparing: "Queuing an init, call or repair task (progressor_request_preparing).",
	observe.StageTaskProcessing:   "The processor's call (progressor_task_processing).",
	observe.StageTaskCompletion:   "Saving the processor's answer with the task (progressor_task_completion).",
	observe.StageProcessRemoving:  "Removing a process, by DELETE or its remove action (progressor_process_removing).",
	observe.StageNotification:     "From a task's end to its waiting API caller learning of it (progressor_notification).",
}

// Registry returns the registry, for more collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// kindRecorder holds the series of one queue and kind.
type kindRecorder struct {
	claimed   prometheus.Counter
	finished  [6]prometheus.Counter // by observe.Outcome
	wait, run prometheus.Observer
	abandoned prometheus.Counter
}

func (k *kindRecorder) Abandoned() { k.abandoned.Inc() }

func (k *kindRecorder) Started(wait time.Duration) {
	k.claimed.Inc()
	k.wait.Observe(max(wait, 0).Seconds())
}

func (k *kindRecorder) Finished(o observe.Outcome, ran time.Duration) {
	if int(o) < len(k.finished) {
		k.finished[o].Inc()
	}
	if o != observe.LeaseLost && o != observe.Released && ran >= 0 {
		k.run.Observe(ran.Seconds())
	}
}

// Kind returns the series of queue and kind, made once; see
// MaxKindSeries.
func (m *Metrics) Kind(queue, kind string) observe.KindRecorder {
	m.kmu.Lock()
	defer m.kmu.Unlock()
	key := [2]string{queue, kind}
	if k, ok := m.kinds[key]; ok {
		return k
	}
	if len(m.kinds) >= MaxKindSeries {
		key[1] = otherKind
		if k, ok := m.kinds[key]; ok {
			return k
		}
	}
	q, kd := key[0], key[1]
	k := &kindRecorder{
		claimed:   m.claimed.WithLabelValues(q, kd),
		wait:      m.wait.WithLabelValues(q, kd),
		run:       m.run.WithLabelValues(q, kd),
		abandoned: m.abandoned.WithLabelValues(q, kd),
	}
	for _, o := range observe.Outcomes {
		k.finished[o] = m.finished.WithLabelValues(q, kd, o.String())
	}
	m.kinds[key] = k
	return k
}

// Claimed records one claim of the engine.
func (m *Metrics) Claimed(queue string, _ int, took time.Duration) {
	m.claimSeconds.WithLabelValues(queue).Observe(took.Seconds())
	if queue != "" && queue == m.cfg.ProcessQueue {
		m.stages[observe.StageScanning].Observe(took.Seconds())
	}
}

// HeartbeatBatch records one lease renewal call.
func (m *Metrics) HeartbeatBatch(leases int) { m.heartbeats.Observe(float64(leases)) }

// FinishBatch records one finish call.
func (m *Metrics) FinishBatch(outcomes int, took time.Duration) {
	m.finishes.Observe(float64(outcomes))
	m.finishTook.Observe(took.Seconds())
}

// Rescued records jobs the reaper took back.
func (m *Metrics) Rescued(jobs int) { m.rescued.Add(float64(jobs)) }

// TimedOut records jobs whose attempts the reaper ended at their deadline.
func (m *Metrics) TimedOut(jobs int) { m.timedOut.Add(float64(jobs)) }

// Throttled records an outcome that throttled queue.
func (m *Metrics) Throttled(queue string) { m.throttles.WithLabelValues(queue).Inc() }

// Request records one HTTP request.
func (m *Metrics) Request(route, method string, status int, took time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	method = knownMethod(method)
	m.httpRequests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.httpSeconds.WithLabelValues(route, method).Observe(took.Seconds())
}

// knownMethod bounds the method label: an unknown method is "other".
func knownMethod(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "other"
}

// Subscribers adds delta to the open event streams.
func (m *Metrics) Subscribers(delta int) { m.subscribers.Add(float64(delta)) }

// UpstreamCall records one upstream call of the gateway.
func (m *Metrics) UpstreamCall(upstream string, status int, took time.Duration) {
	class := "error"
	if status >= 100 && status < 600 {
		class = strconv.Itoa(status/100) + "xx"
	}
	m.upstreamCalls.WithLabelValues(upstream, class).Inc()
	m.upstreamSeconds.WithLabelValues(upstream).Observe(took.Seconds())
}

// WebhookAttempt records one attempt of a webhook delivery.
func (m *Metrics) WebhookAttempt(event, outcome string, took time.Duration) {
	m.webhookAttempts.WithLabelValues(event, outcome).Inc()
	m.webhookSeconds.WithLabelValues(event).Observe(took.Seconds())
}

// ProcessStage records one stage of a process task.
func (m *Metrics) ProcessStage(s observe.Stage, took time.Duration) {
	if int(s) < len(m.stages) {
		m.stages[s].Observe(took.Seconds())
	}
}

// poolCollector reads the store's connection pools at each scrape (in
// memory: no query).
type poolCollector struct{ pools store.PoolReporter }

var (
	poolMax   = prometheus.NewDesc("jobd_db_pool_max_connections", "Most connections the store's pool opens.", []string{"pool"}, nil)
	poolOpen  = prometheus.NewDesc("jobd_db_pool_open_connections", "Connections the store's pool holds open.", []string{"pool"}, nil)
	poolInUse = prometheus.NewDesc("jobd_db_pool_in_use_connections", "Connections of the store's pool in use.", []string{"pool"}, nil)
	poolIdle  = prometheus.NewDesc("jobd_db_pool_idle_connections", "Idle connections of the store's pool.", []string{"pool"}, nil)
	poolWaits = prometheus.NewDesc("jobd_db_pool_waits_total", "Acquisitions of a connection that waited for one.", []string{"pool"}, nil)
	poolWait  = prometheus.NewDesc("jobd_db_pool_wait_seconds_total", "Time spent waiting for a connection of the store's pool.", []string{"pool"}, nil)
)

func (c poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{poolMax, poolOpen, poolInUse, poolIdle, poolWaits, poolWait} {
		ch <- d
	}
}

func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.pools.PoolStats() {
		ch <- prometheus.MustNewConstMetric(poolMax, prometheus.GaugeValue, float64(p.MaxConns), p.Pool)
		ch <- prometheus.MustNewConstMetric(poolOpen, prometheus.GaugeValue, float64(p.Open), p.Pool)
		ch <- prometheus.MustNewConstMetric(poolInUse, prometheus.GaugeValue, float64(p.InUse), p.Pool)
		ch <- prometheus.MustNewConstMetric(poolIdle, prometheus.GaugeValue, float64(p.Idle), p.Pool)
		ch <- prometheus.MustNewConstMetric(poolWaits, prometheus.CounterValue, float64(p.Waits), p.Pool)
		ch <- prometheus.MustNewConstMetric(poolWait, prometheus.CounterValue, p.WaitDuration.Seconds(), p.Pool)
	}
}
