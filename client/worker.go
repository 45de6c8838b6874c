package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/step"
)

// WorkerConfig configures a remote Worker. Only Queues is required.
type WorkerConfig struct {
	Queues []string
	// Concurrency is how many jobs run at once; default 1. One claim asks
	// for as many jobs as slots are free.
	Concurrency int
	// ClaimWait is how long one claim long-polls; default 30s.
	ClaimWait time.Duration
	// HeartbeatInterval is the longest gap between heartbeats (which keep
	// the worker online and renew every lease at once); default 10s, and
	// shorter when a running job's claim advises it (its
	// HeartbeatIntervalSeconds: a third of its lease).
	HeartbeatInterval time.Duration
	// ShutdownTimeout is how long Run waits, once its context ends, for
	// running jobs before it cancels them and releases them (queued again
	// at once, their attempt not counted); default 20s, within the
	// 30 s orchestrators usually allow between SIGTERM and SIGKILL.
	ShutdownTimeout time.Duration
	// StopGrace is how long a shutdown waits, after cancelling the
	// handlers that outlived ShutdownTimeout, before it releases their
	// jobs without them (a handler that ignores its context); default
	// DefaultStopGrace (5s).
	StopGrace time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Worker runs jobs claimed from a jobd server over HTTP, with a client
// made with a worker's API key. Register handlers with Handle, then Run.
//
// The outcomes of its jobs go to the server in batches (POST
// /api/v1/worker/outcomes): every outcome that is ready while the last
// batch is on its way goes in the next. An outcome whose request got no
// answer (the connection broke, the server answered 503 until the
// request's own timeout) is sent again, as it was, until it is answered
// or its lease would have expired: the server answers an outcome it has
// applied already as a repeat. Until then its lease is renewed with the
// running jobs'.
type Worker struct {
	c   *Client
	cfg WorkerConfig
	log *slog.Logger

	mu       sync.Mutex
	handlers map[string]handler
	fallback handler
	running  map[uuid.UUID]*run
	slotFree chan struct{}

	// out holds the outcomes on their way to the server.
	out outbox
}

// run is one job being handled here.
type run struct {
	job    api.ClaimedJob
	cancel context.CancelCauseFunc
	// abandoned: the shutdown released the job without its handler,
	// which ignored its cancel; the handler's outcome is dropped.
	abandoned bool
	// expires is when the job's lease expires, as last renewed here.
	expires time.Time
}

// DefaultStopGrace is WorkerConfig.StopGrace's default.
const DefaultStopGrace = 5 * time.Second

// NewWorker returns a worker over c. When c sends its requests with its
// own HTTP client (no WithHTTPClient), the worker keeps at least
// Concurrency idle connections to the server.
func NewWorker(c *Client, cfg WorkerConfig) *Worker {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 1
	}
	if cfg.ClaimWait <= 0 {
		cfg.ClaimWait = 30 * time.Second
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = 10 * time.Second
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 20 * time.Second
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = DefaultStopGrace
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	w := &Worker{
		c: c.withIdleConns(cfg.Concurrency), cfg: cfg, log: cfg.Logger,
		handlers: make(map[string]handler),
		running:  make(map[uuid.UUID]*run),
		slotFree: make(chan struct{}, 1),
	}
	w.out.init()
	return w
}

// HandleAny registers fn for every kind without a handler of its own:
// it gets the claimed job and returns its result as JSON.
func (w *Worker) HandleAny(fn func(ctx context.Context, t *Task[json.RawMessage]) (json.RawMessage, error)) {
	Handle(w, "", fn)
}

// Run claims and runs jobs until ctx ends, then stops claiming, lets the
// running jobs finish for up to ShutdownTimeout, cancels the rest (cause
// ErrShuttingDown) and releases every job whose handler did not succeed:
// it is queued again at once, its attempt not counted, as the engine
// does at its shutdown. A handler that ignores its cancel for
// StopGrace has its job released without it. Run returns once the
// outcomes are sent (or their leases expired); nil after a graceful
// stop; a worker refused by the server (401, 403) returns that error at
// once.
func (w *Worker) Run(ctx context.Context) error {
	if len(w.cfg.Queues) == 0 {
		return errors.New("jobd worker: no queues")
	}
	base := context.WithoutCancel(ctx) // jobs and their reports outlive ctx
	hbCtx, stopHB := context.WithCancel(base)
	sendCtx, stopSend := context.WithCancel(base)
	var wg sync.WaitGroup
	wg.Go(func() { w.heartbeats(hbCtx) })
	sent := make(chan struct{})
	go func() { defer close(sent); w.sendOutcomes(sendCtx) }()

	err := w.claimLoop(ctx, base)
	if !w.waitIdle(w.cfg.ShutdownTimeout) {
		w.mu.Lock()
		for _, r := range w.running {
			r.cancel(ErrShuttingDown)
		}
		w.mu.Unlock()
		if !w.waitIdle(w.cfg.StopGrace) {
			w.abandon()
		}
	}
	w.out.close()
	<-sent // every outcome answered, or its lease expired
	stopSend()
	stopHB()
	wg.Wait()
	return err
}

// abandon releases the jobs whose handlers still run after their cancel,
// and forgets them: their outcomes, if they ever come, are dropped.
func (w *Worker) abandon() {
	w.mu.Lock()
	var stuck []*run
	for id, r := range w.running {
		r.abandoned = true
		stuck = append(stuck, r)
		delete(w.running, id)
	}
	w.mu.Unlock() // r.expires no longer moves: a heartbeat renews the running jobs
	for _, r := range stuck {
		w.log.Error("jobd worker: handler still running after its cancel; releasing its job without waiting for it", "job_id", r.job.ID)
		w.out.add(&pending{item: api.OutcomeItem{ID: r.job.ID, LeaseToken: r.job.LeaseToken, Outcome: api.OutcomeRelease},
			job: r.job, expires: r.expires})
	}
}

// claimLoop claims while slots are free and the outcomes on their way
// are fewer than Concurrency, until ctx ends or the server refuses the
// worker. While jobs run, it waits for a quarter of the slots to be free
// (minBatch), as the engine's pools do, so that a busy worker claims in
// batches rather than a job at a time.
func (w *Worker) claimLoop(ctx, base context.Context) error {
	backoff := time.Second
	minBatch := max(1, w.cfg.Concurrency/4)
	for ctx.Err() == nil {
		running := w.count()
		free := w.cfg.Concurrency - running
		if free <= 0 || (running > 0 && free < minBatch) || w.out.len() >= w.cfg.Concurrency {
			select {
			case <-w.slotFree:
			case <-w.out.drained:
			case <-ctx.Done():
			}
			continue
		}
		at := time.Now()
		jobs, err := w.c.Claim(ctx, w.cfg.Queues, free, w.cfg.ClaimWait)
		if ctx.Err() != nil {
			// Jobs a cancelled claim took come back when their leases
			// expire.
			return nil
		}
		if errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrForbidden) {
			return fmt.Errorf("jobd worker: claim: %w", err)
		}
		if err != nil {
			w.log.Warn("jobd worker: claim failed; retrying", "err", err, "in", backoff)
			if sleep(ctx, backoff) != nil {
				return nil
			}
			backoff = min(2*backoff, 30*time.Second)
			continue
		}
		backoff = time.Second
		for _, j := range jobs {
			w.start(base, j, at.Add(time.Duration(j.LeaseTTL)))
		}
	}
	return nil
}

func (w *Worker) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.running)
}

// freed tells the claim loop that a slot is free.
func (w *Worker) freed() {
	select {
	case w.slotFree <- struct{}{}:
	default:
	}
}

// start runs a claimed job, whose lease expires at expires, in its own
// goroutine.
func (w *Worker) start(base context.Context, j api.ClaimedJob, expires time.Time) {
	ctx, cancel := context.WithCancelCause(base)
	stopDeadline := context.CancelFunc(func() {})
	if j.Deadline != nil {
		ctx, stopDeadline = context.WithDeadlineCause(ctx, *j.Deadline, ErrTimedOut)
	}
	r := &run{job: j, cancel: cancel, expires: expires}
	w.mu.Lock()
	w.running[j.ID] = r
	h := w.handlers[j.Kind]
	if h == nil {
		h = w.fallback
	}
	w.mu.Unlock()
	go func() {
		defer cancel(nil)
		defer stopDeadline()
		res, err := w.call(step.WithRecorder(ctx, &taskSteps{w: w, job: j}), h, j)
		if wt := step.AsWait(err); wt != nil && ctx.Err() == nil {
			// The attempt ends waiting (durable.go): no outcome.
			w.wait(base, j, wt)
			w.mu.Lock()
			delete(w.running, j.ID)
			w.mu.Unlock()
			w.freed()
			return
		}
		it, report := w.outcome(ctx, j, res, err)
		w.mu.Lock()
		if r.abandoned {
			w.mu.Unlock()
			w.log.Warn("jobd worker: job ended after the shutdown released it; outcome dropped", "job_id", j.ID)
			return
		}
		if report {
			// Queued before the job leaves running, so that Run, once no
			// job runs, finds every outcome in the outbox.
			w.out.add(&pending{item: it, job: j, expires: r.expires})
		}
		delete(w.running, j.ID)
		w.mu.Unlock()
		w.freed()
	}()
}

// call runs the handler, turning a panic into a retryable failure, as
// the engine does.
func (w *Worker) call(ctx context.Context, h handler, j api.ClaimedJob) (res json.RawMessage, err error) {
	if h == nil {
		return nil, Permanent(fmt.Errorf("no handler for kind %q on this worker", j.Kind))
	}
	defer func() {
		if v := recover(); v != nil {
			w.log.Error("jobd worker: handler panicked", "job_id", j.ID, "panic", v, "stack", string(debug.Stack()))
			res, err = nil, fmt.Errorf("panic: %v", v)
		}
	}()
	return h(ctx, w, j)
}

// outcome is the outcome of a job to report, unless its lease was lost
// (report false): a success, a release when the shutdown cancelled a
// handler that did not succeed, a throttle (Throttle), or a failure,
// retryable unless Permanent (after RetryAfter's delay, or the queue's
// backoff).
func (w *Worker) outcome(ctx context.Context, j api.ClaimedJob, res json.RawMessage, err error) (it api.OutcomeItem, report bool) {
	cause := context.Cause(ctx)
	if errors.Is(cause, ErrLeaseLost) {
		w.log.Warn("jobd worker: lease lost; outcome dropped", "job_id", j.ID)
		return it, false
	}
	if err != nil && errors.Is(cause, ErrTimedOut) {
		w.log.Warn("jobd worker: the job's deadline passed; the server ends the attempt", "job_id", j.ID, "deadline", j.Deadline)
		return it, false
	}
	it = api.OutcomeItem{ID: j.ID, LeaseToken: j.LeaseToken}
	var (
		p     permanent
		after retryAfter
		thr   throttle
	)
	switch {
	case err == nil:
		it.Outcome, it.Result = api.OutcomeComplete, res
	case errors.Is(cause, ErrShuttingDown):
		it.Outcome = api.OutcomeRelease
	case errors.As(err, &thr):
		d := api.Duration(thr.delay)
		it.Outcome, it.Error, it.Throttle = api.OutcomeFail, err.Error(), &d
	case errors.As(err, &p):
		it.Outcome, it.Error = api.OutcomeFail, err.Error()
	case errors.As(err, &after):
		d := api.Duration(after.delay)
		it.Outcome, it.Error, it.Retryable, it.RetryAfter = api.OutcomeFail, err.Error(), true, &d
	default:
		it.Outcome, it.Error, it.Retryable = api.OutcomeFail, err.Error(), true
	}
	return it, true
}

// stop cancels a running job's context with cause.
func (w *Worker) stop(id uuid.UUID, cause error) {
	w.mu.Lock()
	r := w.running[id]
	w.mu.Unlock()
	if r != nil {
		r.cancel(cause)
	}
}

// lost cancels a job whose report was refused for its lease.
func (w *Worker) lost(id uuid.UUID, err error) {
	if errors.Is(err, ErrConflict) {
		w.stop(id, ErrLeaseLost)
	}
}

// waitIdle waits up to d for no job to be running.
func (w *Worker) waitIdle(d time.Duration) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for w.count() > 0 {
		select {
		case <-w.slotFree:
		case <-deadline.C:
			return w.count() == 0
		}
	}
	return true
}
