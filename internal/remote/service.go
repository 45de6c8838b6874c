package remote

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/observe"
	"github.com/jobd/jobd/store"
)

// Defaults and bounds of the remote workers' protocol.
const (
	// DefaultPreferWindow is the default of Config.PreferWindow.
	DefaultPreferWindow = 60 * time.Second
	// DefaultHeartbeatInterval is the default of Config.HeartbeatInterval
	// (the engine's own default).
	DefaultHeartbeatInterval = 10 * time.Second
	// MaxClaimWait caps a claim's wait.
	MaxClaimWait = 60 * time.Second
	// MaxClaimQueues caps the queues of one claim.
	MaxClaimQueues = 32
	// MaxClaimJobs caps the jobs of one claim and the leases of one
	// heartbeat.
	MaxClaimJobs = 1000
	// MaxWorkerError caps the error text a worker reports; a longer one
	// is cut on a rune boundary.
	MaxWorkerError = 64 << 10
)

// Policy is the engine's policy that the remote workers follow, so that a
// job runs by the same rules wherever it runs; *engine.Engine satisfies
// it.
type Policy interface {
	// RetryDelay is how long a job of queue waits before its next attempt
	// after its attempt-th attempt (1 for the first) failed as retryable
	// without a delay of its own: the queue's backoff.
	RetryDelay(queue string, attempt int) time.Duration
	// QueueTimeout is the default timeout of the jobs of queue that set
	// none, applied at the claims (store.ClaimParams.DefaultTimeout); 0
	// for none.
	QueueTimeout(queue string) time.Duration
	// ClaimPace is how soon a long-polling claim of queue that found
	// nothing claims again when the queue is limited or throttled (flow
	// control): another node's job ending, or the rate's next start,
	// wakes no one. 0 for a queue whose wake-ups suffice.
	ClaimPace(queue string) time.Duration
	// Subscribe calls fn each time jobs may be available in a queue (""
	// for any queue) until unsubscribe is called; fn must not block.
	Subscribe(fn func(queue string)) (unsubscribe func())
}

// Config configures a Service. Zero fields take the documented defaults.
type Config struct {
	// Store holds the jobs and the workers. Required.
	Store store.Store
	// Policy is the engine's (see Policy). Required.
	Policy Policy
	// PreferWindow is the claims' prefer window (store.ClaimParams);
	// default DefaultPreferWindow.
	PreferWindow time.Duration
	// HeartbeatInterval is the server's own heartbeat interval (the
	// engine's): the longest the Service advises a worker to wait between
	// two renewals of a lease (HeartbeatAdvice); default
	// DefaultHeartbeatInterval.
	HeartbeatInterval time.Duration
	// Clock defaults to clock.Real; it paces the long-polls and times
	// the executions.
	Clock clock.Clock
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Jobs records the claims and outcomes; default observe.Nop.
	Jobs observe.Jobs
	// Tracer makes each remote execution a span of its job's trace;
	// default observe.Nop.
	Tracer observe.Tracer
	// MaxSteps, MaxStepResultBytes and MaxChildren are the limits of a
	// job's steps and children (store.StepParams, store.SpawnParams); 0
	// takes job's defaults.
	MaxSteps           int
	MaxStepResultBytes int
	MaxChildren        int
}

// Service holds the rules of the remote workers' protocol: what a claim,
// a heartbeat, progress, a checkpoint and an outcome may be, and what
// each does to the store, under the engine's policy. The HTTP API only
// decodes a worker's request, calls the Service and encodes its answer.
// It is safe for concurrent use.
type Service struct {
	cfg    Config
	store  store.Store
	policy Policy
	clock  clock.Clock
	log    *slog.Logger
	// claims remembers the claims until their outcomes.
	claims claimNotes
	// cursors are where the workers' next claims start; watchWakeups
	// subscribes them, once, to the policy's wake-ups.
	cursors      cursors
	watchWakeups sync.Once
	// lastSeen is when each worker's claim last recorded its sign of
	// life on this node (claimSeen).
	seenMu   sync.Mutex
	lastSeen map[string]time.Time
}

// New returns a Service.
func New(cfg Config) (*Service, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("remote: Config.Store is required")
	case cfg.Policy == nil:
		return nil, errors.New("remote: Config.Policy is required")
	case cfg.PreferWindow < 0:
		return nil, fmt.Errorf("remote: the prefer window must not be negative, got %s", cfg.PreferWindow)
	case cfg.HeartbeatInterval < 0:
		return nil, fmt.Errorf("remote: the heartbeat interval must not be negative, got %s", cfg.HeartbeatInterval)
	}
	if cfg.HeartbeatInterval == 0 {
		cfg.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if cfg.PreferWindow == 0 {
		cfg.PreferWindow = DefaultPreferWindow
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Jobs == nil {
		cfg.Jobs = observe.Nop{}
	}
	if cfg.Tracer == nil {
		cfg.Tracer = observe.Nop{}
	}
	return &Service{cfg: cfg, store: cfg.Store, policy: cfg.Policy, clock: cfg.Clock, log: cfg.Logger,
		lastSeen: make(map[string]time.Time)}, nil
}

// HeartbeatAdvice is how often a worker should renew the lease of a job
// whose lease lasts ttl: a third of it (two renewals may fail before the
// lease expires), at most the server's own heartbeat interval.
func (s *Service) HeartbeatAdvice(ttl time.Duration) time.Duration {
	return min(ttl/3, s.cfg.HeartbeatInterval)
}

// forbidden is a 403 problem naming field.
func forbidden(field, format string, args ...any) error {
	k, _ := api.LookupProblem(api.ProblemForbidden)
	return &api.Problem{Type: k.Type, Title: k.Title, Status: k.Status, Detail: fmt.Sprintf(format, args...), Field: field}
}

// seen records a sign of life of worker w.
func (s *Service) seen(ctx context.Context, w *store.Worker, status store.WorkerStatus) error {
	if err := s.store.WorkerSeen(ctx, w.ID, status, 0, 0); err != nil {
		return err
	}
	s.noteSeen(w.ID)
	return nil
}

// claimSeenEvery is how often a worker's claims record its sign of life
// on one node: a worker that claims many times a second is seen once a
// second, a write its claims then do not wait for. (A heartbeat, and an
// outcome, record it every time.)
const claimSeenEvery = time.Second

// claimSeen records a sign of life of worker w for its claim, unless
// one was recorded on this node within claimSeenEvery: too recently for
// the worker to be offline (the offline sweep waits minutes).
func (s *Service) claimSeen(ctx context.Context, w *store.Worker) error {
	s.seenMu.Lock()
	last, ok := s.lastSeen[w.ID]
	s.seenMu.Unlock()
	if ok && s.clock.Now().Sub(last) < claimSeenEvery {
		return nil
	}
	return s.seen(ctx, w, "")
}

// noteSeen notes that worker id's sign of life was recorded now.
func (s *Service) noteSeen(id string) {
	now := s.clock.Now()
	s.seenMu.Lock()
	defer s.seenMu.Unlock()
	if len(s.lastSeen) >= maxSeenNotes {
		for k, t := range s.lastSeen {
			if now.Sub(t) >= claimSeenEvery {
				delete(s.lastSeen, k)
			}
		}
	}
	s.lastSeen[id] = now
}

// maxSeenNotes bounds lastSeen; past it, the notes too old to matter go.
const maxSeenNotes = 10_000
