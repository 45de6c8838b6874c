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
)

// WorkerConfig configures a remote Worker. Only Queues is required.
type WorkerConfig struct {
	Queues []string
	// Concurrency is how many jobs run at once; default 1.
	Concurrency int
	// ClaimWait is how long one claim long-polls; default 30s.
	ClaimWait time.Duration
	// HeartbeatInterval is the gap between heartbeats (which keep the
	// worker online and renew every lease at once); default 10s, and
	// shorter when a running job's lease TTL is under three times it.
	HeartbeatInterval time.Duration
	// ShutdownTimeout is how long Run waits, once its context ends, for
	// running jobs before it cancels them and releases them (queued again
	// at once, their attempt not counted); default 20s, within the
	// 30 s orchestrators usually allow between SIGTERM and SIGKILL.
	ShutdownTimeout time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Worker runs jobs claimed from a jobd server over HTTP, with a client
// made with a worker's API key. Register handlers with Handle, then Run.
type Worker struct {
	c   *Client
	cfg WorkerConfig
	log *slog.Logger

	mu       sync.Mutex
	handlers map[string]handler
	fallback handler
	running  map[uuid.UUID]*run
	slotFree chan struct{}
}

// run is one job being handled here.
type run struct {
	job    api.ClaimedJob
	cancel context.CancelCauseFunc
	// abandoned: the shutdown released the job without its handler,
	// which ignored its cancel; the handler's outcome is dropped.
	abandoned bool
}

// hardStopGrace is how long a shutdown waits, after cancelling the
// handlers that outlived ShutdownTimeout, before it releases their jobs
// without them.
const hardStopGrace = 5 * time.Second

// NewWorker returns a worker over c.
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
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Worker{
		c: c, cfg: cfg, log: cfg.Logger,
		handlers: make(map[string]handler),
		running:  make(map[uuid.UUID]*run),
		slotFree: make(chan struct{}, 1),
	}
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
// hardStopGrace has its job released without it. Run returns nil after a
// graceful stop; a worker refused by the server (401, 403) returns that
// error at once.
func (w *Worker) Run(ctx context.Context) error {
	if len(w.cfg.Queues) == 0 {
		return errors.New("jobd worker: no queues")
	}
	base := context.WithoutCancel(ctx) // jobs and their reports outlive ctx
	hbCtx, stopHB := context.WithCancel(base)
	var wg sync.WaitGroup
	hbErr := make(chan error, 1)
	wg.Go(func() { hbErr <- w.heartbeats(hbCtx) })

	err := w.claimLoop(ctx, base)
	if w.waitIdle(w.cfg.ShutdownTimeout) {
		stopHB()
		wg.Wait()
		return err
	}
	w.mu.Lock()
	for _, r := range w.running {
		r.cancel(ErrShuttingDown)
	}
	w.mu.Unlock()
	if !w.waitIdle(hardStopGrace) {
		w.abandon(base)
	}
	stopHB()
	wg.Wait()
	return err
}

// abandon releases the jobs whose handlers still run after their cancel,
// and forgets them: their outcomes, if they ever come, are dropped.
func (w *Worker) abandon(base context.Context) {
	w.mu.Lock()
	var stuck []*run
	for id, r := range w.running {
		r.abandoned = true
		stuck = append(stuck, r)
		delete(w.running, id)
	}
	w.mu.Unlock()
	for _, r := range stuck {
		w.log.Error("jobd worker: handler still running after its cancel; releasing its job without waiting for it", "job_id", r.job.ID)
		rctx, cancel := context.WithTimeout(base, reportTimeout(r.job))
		if _, err := w.c.Release(rctx, r.job.ID, r.job.LeaseToken); err != nil {
			w.log.Warn("jobd worker: release job", "job_id", r.job.ID, "err", err)
		}
		cancel()
	}
}

// reportTimeout bounds the report of j's outcome: its lease TTL (the
// server keeps the lease that long anyway, and the client retries while
// the server's database does not answer), at least 30s.
func reportTimeout(j api.ClaimedJob) time.Duration {
	return max(time.Duration(j.LeaseTTL), 30*time.Second)
}

// claimLoop claims while slots are free, until ctx ends or the server
// refuses the worker.
func (w *Worker) claimLoop(ctx, base context.Context) error {
	backoff := time.Second
	for ctx.Err() == nil {
		free := w.cfg.Concurrency - w.count()
		if free <= 0 {
			select {
			case <-w.slotFree:
			case <-ctx.Done():
			}
			continue
		}
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
			w.start(base, j)
		}
	}
	return nil
}

func (w *Worker) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.running)
}

// start runs a claimed job in its own goroutine.
func (w *Worker) start(base context.Context, j api.ClaimedJob) {
	ctx, cancel := context.WithCancelCause(base)
	stopDeadline := context.CancelFunc(func() {})
	if j.Deadline != nil {
		ctx, stopDeadline = context.WithDeadlineCause(ctx, *j.Deadline, ErrTimedOut)
	}
	r := &run{job: j, cancel: cancel}
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
		res, err := w.call(ctx, h, j)
		w.mu.Lock()
		abandoned := r.abandoned
		w.mu.Unlock()
		if abandoned {
			w.log.Warn("jobd worker: job ended after the shutdown released it; outcome dropped", "job_id", j.ID)
			return
		}
		w.finish(base, ctx, j, res, err)
		w.mu.Lock()
		delete(w.running, j.ID)
		w.mu.Unlock()
		select {
		case w.slotFree <- struct{}{}:
		default:
		}
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

// finish reports a job's outcome, unless its lease was lost: a success,
// a release when the shutdown cancelled a handler that did not succeed,
// a throttle (Throttle), or a failure, retryable unless Permanent (after
// RetryAfter's delay, or the queue's backoff).
func (w *Worker) finish(base, ctx context.Context, j api.ClaimedJob, res json.RawMessage, err error) {
	cause := context.Cause(ctx)
	if errors.Is(cause, ErrLeaseLost) {
		w.log.Warn("jobd worker: lease lost; outcome dropped", "job_id", j.ID)
		return
	}
	if err != nil && errors.Is(cause, ErrTimedOut) {
		w.log.Warn("jobd worker: the job's deadline passed; the server ends the attempt", "job_id", j.ID, "deadline", j.Deadline)
		return
	}
	rctx, cancel := context.WithTimeout(base, reportTimeout(j))
	defer cancel()
	var (
		rerr  error
		p     permanent
		after retryAfter
		thr   throttle
	)
	switch {
	case err == nil:
		_, rerr = w.c.Complete(rctx, j.ID, j.LeaseToken, res)
	case errors.Is(cause, ErrShuttingDown):
		_, rerr = w.c.Release(rctx, j.ID, j.LeaseToken)
	case errors.As(err, &thr):
		_, rerr = w.c.FailThrottle(rctx, j.ID, j.LeaseToken, err.Error(), thr.delay)
	case errors.As(err, &p):
		_, rerr = w.c.Fail(rctx, j.ID, j.LeaseToken, err.Error(), false)
	case errors.As(err, &after):
		_, rerr = w.c.FailRetryAfter(rctx, j.ID, j.LeaseToken, err.Error(), after.delay)
	default:
		_, rerr = w.c.Fail(rctx, j.ID, j.LeaseToken, err.Error(), true)
	}
	if rerr != nil {
		w.log.Warn("jobd worker: report outcome", "job_id", j.ID, "err", rerr)
	}
}

// heartbeats keeps the worker online and renews its leases until ctx
// ends; it cancels the jobs whose lease is lost or whose cancel was
// requested.
func (w *Worker) heartbeats(ctx context.Context) error {
	for {
		w.beat(ctx)
		if sleep(ctx, w.beatInterval()) != nil {
			return nil
		}
	}
}

func (w *Worker) beatInterval() time.Duration {
	d := w.cfg.HeartbeatInterval
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.running {
		d = min(d, time.Duration(r.job.LeaseTTL)/3)
	}
	return max(d, 10*time.Millisecond)
}

func (w *Worker) beat(ctx context.Context) {
	w.mu.Lock()
	leases := make([]api.Lease, 0, len(w.running))
	for id, r := range w.running {
		leases = append(leases, api.Lease{ID: id, LeaseToken: r.job.LeaseToken})
	}
	status := "active"
	switch len(leases) {
	case 0:
		status = "idle"
	case w.cfg.Concurrency:
		status = "busy"
	}
	w.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	states, err := w.c.WorkerHeartbeat(cctx, status, leases)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("jobd worker: heartbeat failed", "err", err)
		}
		return
	}
	for _, s := range states {
		switch {
		case !s.Held:
			w.stop(s.ID, ErrLeaseLost)
		case s.CancelRequested:
			w.stop(s.ID, ErrJobCanceled)
		}
	}
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
