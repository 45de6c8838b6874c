package engine

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"
	"unicode/utf8"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/flow"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/observe"
	"github.com/jobd/jobd/store"
)

// Defaults of Config (docs/design.md).
const (
	DefaultHeartbeatInterval = 10 * time.Second
	DefaultPollInterval      = 2 * time.Second
	DefaultProgressInterval  = time.Second
	DefaultReaperInterval    = 10 * time.Second
	DefaultRetention         = 7 * 24 * time.Hour
	// DefaultShutdownTimeout leaves a node stopped by SIGTERM time to
	// release its jobs and drain its HTTP requests within the 30 s that
	// orchestrators usually allow before SIGKILL (Kubernetes'
	// terminationGracePeriodSeconds, ECS's stopTimeout).
	DefaultShutdownTimeout = 20 * time.Second
	// DefaultStopGrace: ShutdownTimeout and StopGrace together stay within
	// those 30 s.
	DefaultStopGrace    = 5 * time.Second
	DefaultAbandonGrace = 10 * time.Second
)

// Config configures an Engine. Zero fields take the documented defaults
// (see WithDefaults).
type Config struct {
	// Store is the database. Required.
	Store store.Store
	// Queues lists the worker pools of this node. None: this node only
	// inserts and reads (and still takes its turn at the duties).
	Queues []QueueConfig
	// Node names this process as a lease owner and leader candidate.
	// Default: hostname-pid-random.
	Node string
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Clock defaults to clock.Real.
	Clock clock.Clock
	// HeartbeatInterval is the gap between lease renewals of the running
	// jobs (one batched call for all of them). Default 10s.
	HeartbeatInterval time.Duration
	// PollInterval is the safety-net claim poll of an idle queue, under
	// the store's wake-ups, and the longest a busy queue's claims go
	// without starting from the best job, which finds the jobs they
	// skipped (a busy lock_key, a row another transaction held). Default
	// 2s.
	PollInterval time.Duration
	// ProgressInterval is the least gap between two progress writes of a
	// job; a phase change is written at once. Default 1s.
	ProgressInterval time.Duration
	// ReaperInterval is the gap between two rescues of expired leases by
	// this node (every node rescues); the term of the maintenance leader,
	// which prunes, is three times as long, renewed every ReaperInterval.
	// Default 10s.
	ReaperInterval time.Duration
	// Retention is how long finished jobs are kept. Default 7 days.
	Retention time.Duration
	// ShutdownTimeout is how long a shutdown waits for running handlers
	// before it cancels them and releases their jobs. Default 20s.
	ShutdownTimeout time.Duration
	// StopGrace is how long a shutdown waits, after cancelling the
	// handlers that outlived ShutdownTimeout, before it releases their
	// jobs without them (a handler that ignores its context). Default 5s.
	StopGrace time.Duration
	// LeaseTTL is the lease of the jobs this engine inserts
	// (Insert, InsertMany, InsertTx, InsertManyTx) that set none: how
	// long a job whose holder stopped renewing it (a node that died)
	// waits before a reaper rescues it, within one ReaperInterval more.
	// Running jobs renew their leases every HeartbeatInterval, which
	// must stay well under it. Default job.DefaultLeaseTTL (60s); at
	// least 1s.
	LeaseTTL time.Duration
	// WorkflowMaxTasks bounds the tasks of a workflow this engine submits
	// (SubmitWorkflow); 0 is job.DefaultWorkflowMaxTasks (10 000).
	WorkflowMaxTasks int
	// MaxSteps bounds the steps one job records (Step); 0 is
	// job.DefaultMaxSteps (1 000). MaxStepResultBytes bounds one step's
	// result; 0 is job.DefaultMaxStepResult (1 MiB). MaxChildren bounds
	// the children one job spawns (Spawn); 0 is job.DefaultMaxChildren
	// (10 000).
	MaxSteps           int
	MaxStepResultBytes int
	MaxChildren        int
	// AbandonGrace is how long a handler may run past its job's deadline
	// (its context ended at the deadline) before the engine stops
	// counting it against its pool, logs it and records it
	// (observe.KindRecorder.Abandoned): a handler that ignores its
	// context cannot hold a slot forever. Default 10s.
	AbandonGrace time.Duration
	// Listen runs the store's Listen even when Queues is empty, for the
	// subscribers of Subscribe (the HTTP API's long-polling claims).
	Listen bool
	// PreferWindow is the claim's prefer window (store.ClaimParams).
	// Default 60s.
	PreferWindow time.Duration
	// Observer records the claims, executions and outcomes of this
	// engine's jobs (metrics); default observe.Nop. It is called on the
	// hot path and must not block.
	Observer observe.Jobs
	// Tracer makes each execution a span of its submitter's trace;
	// default observe.Nop (no tracing, no cost).
	Tracer observe.Tracer
}

// DefaultPreferWindow is the default of Config.PreferWindow.
const DefaultPreferWindow = 60 * time.Second

// WithDefaults returns c with its zero fields set to the defaults.
func (c Config) WithDefaults() Config {
	if c.Node == "" {
		c.Node = defaultNode()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = clock.Real
	}
	setDefault(&c.HeartbeatInterval, DefaultHeartbeatInterval)
	setDefault(&c.PollInterval, DefaultPollInterval)
	setDefault(&c.ProgressInterval, DefaultProgressInterval)
	setDefault(&c.ReaperInterval, DefaultReaperInterval)
	setDefault(&c.Retention, DefaultRetention)
	setDefault(&c.ShutdownTimeout, DefaultShutdownTimeout)
	setDefault(&c.StopGrace, DefaultStopGrace)
	setDefault(&c.AbandonGrace, DefaultAbandonGrace)
	setDefault(&c.PreferWindow, DefaultPreferWindow)
	setDefault(&c.LeaseTTL, job.DefaultLeaseTTL)
	if c.Observer == nil {
		c.Observer = observe.Nop{}
	}
	if c.Tracer == nil {
		c.Tracer = observe.Nop{}
	}
	return c
}

func setDefault(d *time.Duration, def time.Duration) {
	if *d == 0 {
		*d = def
	}
}

func defaultNode() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "jobd"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Validate reports the first invalid field of c as a *job.ValidationError
// naming it. Zero fields are valid: they stand for the defaults.
func (c Config) Validate() error {
	if c.Store == nil {
		return job.Invalid("Store", "is required")
	}
	if len(c.Node) > 255 || !utf8.ValidString(c.Node) {
		return job.Invalid("Node", "must be valid UTF-8 of at most 255 bytes")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"HeartbeatInterval", c.HeartbeatInterval},
		{"PollInterval", c.PollInterval},
		{"ProgressInterval", c.ProgressInterval},
		{"ReaperInterval", c.ReaperInterval},
		{"Retention", c.Retention},
		{"ShutdownTimeout", c.ShutdownTimeout},
		{"StopGrace", c.StopGrace},
		{"AbandonGrace", c.AbandonGrace},
		{"PreferWindow", c.PreferWindow},
		{"LeaseTTL", c.LeaseTTL},
	} {
		if d.v < 0 {
			return job.Invalid(d.name, "must not be negative, got %s", d.v)
		}
	}
	if c.LeaseTTL != 0 && c.LeaseTTL < time.Second {
		return job.Invalid("LeaseTTL", "must be at least 1s, got %s", c.LeaseTTL)
	}
	if c.MaxSteps < 0 || c.MaxStepResultBytes < 0 || c.MaxChildren < 0 {
		return job.Invalid("MaxSteps", "MaxSteps, MaxStepResultBytes and MaxChildren must not be negative")
	}
	if c.WorkflowMaxTasks < 0 {
		return job.Invalid("WorkflowMaxTasks", "must not be negative, got %d", c.WorkflowMaxTasks)
	}
	return validateQueues(c.Queues)
}

// QueueConfig is one worker pool: how many jobs of Queue this node runs at
// once, and how long a failed job waits before its next attempt.
type QueueConfig struct {
	Queue       string `json:"queue"`
	Concurrency int    `json:"concurrency"`
	// Backoff is the retry-delay policy; zero is DefaultBackoff.
	Backoff Backoff `json:"backoff"`
	// Capabilities of this pool (see store.ClaimParams). Default none:
	// the pool takes only jobs that require nothing.
	Capabilities []string `json:"capabilities,omitempty"`
	// Timeout is the default timeout of the queue's jobs that set none:
	// it bounds each of their attempts (see job.Job.Timeout), at the
	// claims of this pool and of the remote workers this node serves
	// (Engine.QueueTimeout). Zero for none; at least 1s. In JSON a Go
	// duration string ("10m").
	Timeout time.Duration `json:"-"`
	// Limits is the queue's flow control, which holds on every node and
	// for every remote worker: a node that starts (Run) writes it to the
	// store when it sets any, replacing what the store holds (the API's
	// PUT /api/v1/queues/{name}, say); a queue whose Limits set none
	// keeps the stored ones. In JSON its members sit beside the queue's:
	// "global_limit", "partition_limit", "rate", "throttle_by".
	Limits flow.Limits `json:"-"`
}

// MaxConcurrency bounds QueueConfig.Concurrency.
const MaxConcurrency = 10000

func (q QueueConfig) validate(i int) error {
	field := func(name string) string { return fmt.Sprintf("queues[%d].%s", i, name) }
	if q.Queue == "" {
		return job.Invalid(field("queue"), "is required")
	}
	if len(q.Queue) > 128 || !utf8.ValidString(q.Queue) {
		return job.Invalid(field("queue"), "must be valid UTF-8 of at most 128 bytes")
	}
	for _, r := range q.Queue {
		if r < 0x20 || r == 0x7f {
			return job.Invalid(field("queue"), "must not contain control characters")
		}
	}
	if q.Concurrency < 1 || q.Concurrency > MaxConcurrency {
		return job.Invalid(field("concurrency"), "must be between 1 and %d, got %d", MaxConcurrency, q.Concurrency)
	}
	if err := q.Backoff.validate(field("backoff")); err != nil {
		return err
	}
	if _, err := job.NormalizeCapabilities(field("capabilities"), q.Capabilities); err != nil {
		return err
	}
	if q.Timeout != 0 && q.Timeout < time.Second {
		return job.Invalid(field("timeout"), "must be at least 1s, got %s", q.Timeout)
	}
	if err := q.Limits.Check(); err != nil {
		var ve *job.ValidationError
		if errors.As(err, &ve) {
			return job.Invalid(field(ve.Field), "%s", ve.Reason)
		}
		return err
	}
	return nil
}

func validateQueues(qs []QueueConfig) error {
	seen := make(map[string]bool, len(qs))
	for i, q := range qs {
		if err := q.validate(i); err != nil {
			return err
		}
		if seen[q.Queue] {
			return job.Invalid(fmt.Sprintf("queues[%d].queue", i), "%q is listed twice", q.Queue)
		}
		seen[q.Queue] = true
	}
	return nil
}

// ParseQueues reads the worker pools from JSON (the JOBD_WORKERS setting),
// for example [{"queue":"default","concurrency":4}]. Unknown fields are
// rejected; errors are *job.ValidationError naming the field.
func ParseQueues(data []byte) ([]QueueConfig, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, job.Invalid("queues", "must be a JSON array of queue objects: %v", err)
	}
	qs := make([]QueueConfig, len(raws))
	for i, raw := range raws {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		// The members of QueueConfig and of its Limits, and its timeout
		// and rate's period as strings.
		var q struct {
			QueueConfig
			flow.Limits
			Rate    *rateConfig `json:"rate"`
			Timeout *string     `json:"timeout"`
		}
		if err := dec.Decode(&q); err != nil {
			var ve *job.ValidationError
			if errors.As(err, &ve) {
				ve.Field = fmt.Sprintf("queues[%d].%s", i, ve.Field)
				return nil, ve
			}
			return nil, job.Invalid(fmt.Sprintf("queues[%d]", i), "%v", err)
		}
		qs[i] = q.QueueConfig
		qs[i].Limits = q.Limits
		if q.Rate != nil {
			r, err := q.Rate.rate()
			if err != nil {
				return nil, job.Invalid(fmt.Sprintf("queues[%d].rate.period", i), "%v", err)
			}
			qs[i].Limits.Rate = r
		}
		if q.Timeout != nil {
			d, err := time.ParseDuration(*q.Timeout)
			if err != nil {
				return nil, job.Invalid(fmt.Sprintf("queues[%d].timeout", i), "must be a Go duration such as \"10m\": %v", err)
			}
			qs[i].Timeout = d
		}
	}
	if err := validateQueues(qs); err != nil {
		return nil, err
	}
	return qs, nil
}

// rateConfig is a flow.Rate as ParseQueues reads it: strictly (no
// unknown member), its period a Go duration string.
type rateConfig struct {
	Limit  int     `json:"limit"`
	Period *string `json:"period"`
	By     string  `json:"by"`
	Burst  int     `json:"burst"`
}

func (r rateConfig) rate() (*flow.Rate, error) {
	if r.Period == nil {
		return nil, errors.New("is required: a Go duration such as \"1m\"")
	}
	d, err := time.ParseDuration(*r.Period)
	if err != nil {
		return nil, fmt.Errorf("must be a Go duration such as \"1m\": %w", err)
	}
	return &flow.Rate{Limit: r.Limit, Period: d, By: r.By, Burst: r.Burst}, nil
}
