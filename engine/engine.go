package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/engine/internal/maintenance"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/observe"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/wakeup"
)

// flushTimeout bounds the shutdown's last write of outcomes (retried
// with backoff while the database does not answer).
const flushTimeout = 15 * time.Second

// Engine runs jobs of a store in this process. Create it with New,
// register handlers, then call Run once.
type Engine struct {
	cfg   Config
	store store.Store
	log   *slog.Logger
	clock clock.Clock

	hmu      sync.RWMutex
	handlers map[string]handlerFunc

	// producers is fixed by New, so it is read without a lock.
	producers map[string]*producer
	fin       *finisher

	mu sync.Mutex
	// running holds the jobs whose handlers run here, one entry per claim
	// (a job can be claimed again, here, while a handler that lost its
	// lease still runs).
	running map[*execution]struct{}
	// byJob indexes running by job id, for the cancel notifications.
	byJob map[uuid.UUID][]*execution
	// jobEnded receives (without blocking) each time a running job ends,
	// for the shutdown to recount.
	jobEnded chan struct{}
	// renewKick tells the heartbeat loop that a job with a short lease
	// started and needs renewing sooner than the loop would wake.
	renewKick chan struct{}

	started atomic.Bool
	// stopped is closed when Run returns: the watches of handlers past
	// their deadline (execution.watchAbandon) end with it.
	stopped chan struct{}
	// goroutines runs the handlers.
	goroutines *goroutines
	// hub fans the store's wake-ups out to Subscribe's subscribers.
	hub wakeup.Hub[string]
	// runner runs the maintenance duties (duties.go).
	runner *maintenance.Runner
	// flow is the view of the queues' flow control that paces claims
	// (flow.go).
	flow *flowView
	// points are where the engine reports what its tests wait for.
	points points
}

// Subscribe calls fn with a queue name each time the store says jobs may
// have become available in it ("" for any queue), until unsubscribe is
// called. It shares the engine's one Listen (run when the engine has
// pools or Config.Listen is set). fn must not block. While a subscription
// is open, the engine keeps its view of the queues' flow control fresh
// (ClaimPace), and fn is also called for a queue whose flow control
// changed.
func (e *Engine) Subscribe(fn func(queue string)) (unsubscribe func()) {
	unsubscribeHub := e.hub.Subscribe(fn)
	if e.flow.subscribers.Add(1) == 1 {
		e.flow.needed()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			unsubscribeHub()
			e.flow.subscribers.Add(-1)
		})
	}
}

// New checks cfg, fills its defaults and returns an engine ready for
// Register and Run.
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	cfg = cfg.WithDefaults()
	e := &Engine{
		cfg:       cfg,
		store:     cfg.Store,
		log:       cfg.Logger,
		clock:     cfg.Clock,
		handlers:  make(map[string]handlerFunc),
		producers: make(map[string]*producer, len(cfg.Queues)),
		running:   make(map[*execution]struct{}),
		byJob:     make(map[uuid.UUID][]*execution),
		jobEnded:  make(chan struct{}, 1),
		renewKick: make(chan struct{}, 1),
		stopped:   make(chan struct{}),
		flow:      newFlowView(),
	}
	e.fin = &finisher{e: e, kick: make(chan struct{}, 1)}
	e.goroutines = newGoroutines(e.stopped)
	var err error
	if e.runner, err = newMaintenance(cfg); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if err := e.addOwnDuties(); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	for _, q := range cfg.Queues {
		caps, _ := job.NormalizeCapabilities("capabilities", q.Capabilities) // validated above
		e.producers[q.Queue] = &producer{e: e, cfg: q, caps: caps, wake: make(chan struct{}, 1)}
	}
	return e, nil
}

// Node returns the name this engine uses as lease owner.
func (e *Engine) Node() string { return e.cfg.Node }

// RetryDelay is how long a job of queue waits before its next attempt
// after its attempt-th attempt (1 for the first) failed as retryable: the
// backoff of this engine's pool of queue (QueueConfig.Backoff), or
// DefaultBackoff for a queue it has no pool of. The HTTP API applies it
// to the failures remote workers report, so that a failure waits the
// same wherever its job ran.
func (e *Engine) RetryDelay(queue string, attempt int) time.Duration {
	if p, ok := e.producers[queue]; ok {
		return p.cfg.Backoff.Delay(attempt, nil)
	}
	return DefaultBackoff.Delay(attempt, nil)
}

// QueueTimeout is the default timeout of the jobs of queue that set none:
// the timeout of this engine's pool of queue (QueueConfig.Timeout), 0 for
// none. The HTTP API applies it to the claims of remote workers, so that
// a job is bounded the same wherever it runs.
func (e *Engine) QueueTimeout(queue string) time.Duration {
	if p, ok := e.producers[queue]; ok {
		return p.cfg.Timeout
	}
	return 0
}

// Insert creates one job (see store.Store.JobInsertMany). The store wakes
// the workers of its queue.
func (e *Engine) Insert(ctx context.Context, p job.InsertParams) (store.InsertResult, error) {
	return e.InsertTx(ctx, e.store, p)
}

// InsertMany creates jobs in one transaction: all of them or none.
func (e *Engine) InsertMany(ctx context.Context, ps []job.InsertParams) ([]store.InsertResult, error) {
	return e.InsertManyTx(ctx, e.store, ps)
}

// InsertTx creates one job through ex: inside the transaction ex runs in
// when ex is one of store.Store.InTx (any driver) or a driver's Executor
// over a transaction of the caller's (postgres.(*Store).WithTx). The job
// then exists, and wakes the workers of its queue, only once that
// transaction commits; it is never created if it rolls back.
func (e *Engine) InsertTx(ctx context.Context, ex store.Executor, p job.InsertParams) (store.InsertResult, error) {
	res, err := e.InsertManyTx(ctx, ex, []job.InsertParams{p})
	if err != nil {
		return store.InsertResult{}, err
	}
	return res[0], nil
}

// InsertManyTx is InsertMany through ex (see InsertTx).
func (e *Engine) InsertManyTx(ctx context.Context, ex store.Executor, ps []job.InsertParams) ([]store.InsertResult, error) {
	if e.cfg.LeaseTTL != job.DefaultLeaseTTL {
		ps = withLeaseTTL(ps, e.cfg.LeaseTTL)
	}
	res, err := ex.JobInsertMany(ctx, ps)
	if err != nil {
		return nil, fmt.Errorf("insert jobs: %w", err)
	}
	return res, nil
}

// withLeaseTTL returns ps with ttl as the lease of the jobs that set
// none, copying ps only when one of them needs it.
func withLeaseTTL(ps []job.InsertParams, ttl time.Duration) []job.InsertParams {
	var out []job.InsertParams
	for i, p := range ps {
		if p.LeaseTTL != 0 {
			continue
		}
		if out == nil {
			out = slices.Clone(ps)
		}
		out[i].LeaseTTL = ttl
	}
	if out == nil {
		return ps
	}
	return out
}

// Run works the configured queues and runs the maintenance duties until
// ctx ends, then shuts down gracefully: it stops claiming and the duties
// at once (resigning the leadership, if this node leads), lets running
// handlers finish for up to ShutdownTimeout, then cancels them (cause
// ErrShutdown) and releases every job whose handler did not succeed,
// writes the pending outcomes and returns. Before its first claim it
// writes the flow control of each configured queue that sets any
// (QueueConfig.Limits), retrying while the store fails.
// No goroutine it started outlives it, save a handler that ignores its
// context (its job is released anyway). Run may be called once.
func (e *Engine) Run(ctx context.Context) error {
	if !e.started.CompareAndSwap(false, true) {
		return errors.New("engine: Run called more than once")
	}
	// workCtx carries the store calls that must outlive ctx during the
	// shutdown (heartbeats, progress, outcomes); jobBase is the parent of
	// the handlers' contexts, which are cancelled one by one with a cause.
	defer close(e.stopped)
	jobBase := context.WithoutCancel(ctx)
	workCtx, stopWork := context.WithCancel(jobBase)
	defer stopWork()

	finStop := make(chan struct{})
	finDone := make(chan int, 1)
	go func() { finDone <- e.fin.run(workCtx, finStop) }()

	hbStop := make(chan struct{})
	var hb sync.WaitGroup
	hb.Go(func() { e.heartbeats(workCtx, hbStop) })

	var loops sync.WaitGroup
	if len(e.producers) > 0 || e.cfg.Listen {
		loops.Go(func() { e.listen(ctx) })
	}
	// The configured limits hold before the first claim.
	e.applyLimits(ctx)
	loops.Go(func() { e.watchFlow(ctx) })
	for _, p := range e.producers {
		loops.Go(func() { p.run(ctx, workCtx, jobBase) })
	}
	loops.Go(func() { _ = e.runner.Run(ctx) }) // Run once, guarded above

	e.log.Info("engine: started", "node", e.cfg.Node, "queues", len(e.producers))
	<-ctx.Done()
	e.log.Info("engine: shutting down", "node", e.cfg.Node, "running", e.runningCount())

	loops.Wait() // no new claims from here on
	e.drain()
	close(hbStop)

	close(finStop)
	var dropped int
	t := e.clock.NewTimer(flushTimeout)
	select {
	case dropped = <-finDone:
	case <-t.C():
		stopWork() // the database does not answer: give up on the outcomes
		dropped = <-finDone
	}
	t.Stop()
	stopWork() // ends a heartbeat still waiting on the database
	hb.Wait()

	e.log.Info("engine: stopped", "node", e.cfg.Node)
	if dropped > 0 {
		return fmt.Errorf("engine: %d job outcomes were not written before shutdown; the reaper will return those jobs when their leases expire", dropped)
	}
	return nil
}

// listen turns the store's notifications into producer wake-ups and
// cancels of the running jobs whose cancel was requested, until ctx ends.
// A cancel missed meanwhile (a reconnection) is seen at the job's next
// heartbeat.
func (e *Engine) listen(ctx context.Context) {
	h := health{log: e.log, what: "listen for notifications", point: &e.points.health}
	delay := retryMin
	for {
		err := e.store.Listen(ctx, e.notified)
		if ctx.Err() != nil {
			return
		}
		h.fail(err)
		if !sleep(ctx, e.clock, delay) {
			return
		}
		delay = nextRetry(delay)
	}
}

// notified handles one notification of the store's Listen.
func (e *Engine) notified(n store.Notification) {
	if n.CancelJob != uuid.Nil {
		e.cancelJob(n.CancelJob)
		return
	}
	e.wakeQueueFrom(n.Queue, n.Earliest)
}

// cancelJob cancels, with ErrCancelRequested, the handlers of job id that
// run on this node, if any.
func (e *Engine) cancelJob(id uuid.UUID) {
	e.mu.Lock()
	xs := append([]*execution(nil), e.byJob[id]...)
	e.mu.Unlock()
	for _, x := range xs {
		e.log.Debug("engine: cancel requested; cancelling the handler", "job_id", id, "kind", x.job.Kind, "attempt", x.job.Attempt)
		x.cancel(ErrCancelRequested)
	}
}

// wakeQueue wakes the producer of queue, or every producer for "".
func (e *Engine) wakeQueue(queue string) {
	e.wakeQueueFrom(queue, nil)
}

// wakeQueueFrom wakes the producer of queue about jobs none of which
// sorts before earliest in claim order (nil: anywhere), or every producer
// for "".
func (e *Engine) wakeQueueFrom(queue string, earliest *store.ClaimBound) {
	e.hub.Send(queue)
	if queue == "" {
		for _, p := range e.producers {
			p.wakeUp()
		}
		return
	}
	if p, ok := e.producers[queue]; ok {
		p.wakeFrom(earliest)
	}
}

func (e *Engine) track(x *execution) {
	e.mu.Lock()
	e.running[x] = struct{}{}
	id := x.job.ID
	e.byJob[id] = append(e.byJob[id], x)
	e.mu.Unlock()
	e.scheduleRenewal(x)
}

// untrackLocked removes x from the running jobs; e.mu is held.
func (e *Engine) untrackLocked(x *execution) {
	delete(e.running, x)
	id := x.job.ID
	xs := e.byJob[id]
	for i, y := range xs {
		if y == x {
			xs = append(xs[:i], xs[i+1:]...)
			break
		}
	}
	if len(xs) == 0 {
		delete(e.byJob, id)
	} else {
		e.byJob[id] = xs
	}
}

// end hands x's outcome (its handler ran for ran) to the finisher and removes x from the running
// jobs, unless the shutdown gave its job up already. The outcome is queued
// before x stops counting as running, so the shutdown never closes the
// finisher under it.
func (e *Engine) end(x *execution, out store.Outcome, ran time.Duration) {
	e.mu.Lock()
	_, ok := e.running[x]
	if ok {
		e.untrackLocked(x)
		it := x.finishItem(out, ran)
		if out.Throttle > 0 {
			// The pool claims again once the throttle holds.
			it.throttled = x.p
			x.p.throttles.Add(1)
		}
		e.fin.add(it)
	}
	e.mu.Unlock()
	if !ok && x.abandoned.Load() {
		e.log.Warn("engine: an abandoned handler returned at last; its outcome is dropped",
			"job_id", x.job.ID, "kind", x.job.Kind, "outcome", out.Status, "ran", ran)
		return
	}
	if !ok {
		e.log.Warn("engine: job ended after the shutdown released it; outcome dropped",
			"job_id", x.job.ID, "kind", x.job.Kind, "outcome", out.Status)
		e.points.outcomeDropped.Report(x.job.ID)
		return
	}
	x.p.done()
	e.notifyEnded()
}

// endTimedOut removes x, whose handler stopped at its attempt's deadline,
// from the running jobs without an outcome: the store refuses any write
// of an attempt past its deadline, and the reaper ends it "timed-out"
// (JobTimeOut). Its execution counts as lease_lost: nothing written.
func (e *Engine) endTimedOut(x *execution, ran time.Duration) {
	e.mu.Lock()
	_, ok := e.running[x]
	if ok {
		e.untrackLocked(x)
	}
	e.mu.Unlock()
	if !ok {
		return // abandoned, or released by the shutdown: recorded then
	}
	e.log.Info("engine: the handler stopped at its job's deadline; the reaper ends the attempt",
		"job_id", x.job.ID, "kind", x.job.Kind, "attempt", x.job.Attempt, "deadline", x.job.Deadline)
	x.rec.Finished(observe.LeaseLost, ran)
	x.span.End(observe.LeaseLost, ErrTimedOut.Error(), e.clock.Now())
	e.points.timedOut.Report(x.job.ID)
	x.p.done()
	e.notifyEnded()
}

// abandon gives up a handler still running past its job's deadline and
// AbandonGrace: its slot is free for another job, it is logged and
// recorded (observe.KindRecorder.Abandoned); whatever it returns is
// dropped, and the reaper ends the attempt "timed-out". A handler that
// ended meanwhile, or that a shutdown released, is left alone.
func (e *Engine) abandon(x *execution) {
	e.mu.Lock()
	_, ok := e.running[x]
	if ok {
		e.untrackLocked(x)
		x.abandoned.Store(true)
	}
	e.mu.Unlock()
	if !ok {
		return
	}
	e.log.Error("engine: a handler ignored its job's deadline; it no longer counts against its pool, and whatever it returns is dropped",
		"job_id", x.job.ID, "queue", x.job.Queue, "kind", x.job.Kind, "attempt", x.job.Attempt,
		"deadline", x.job.Deadline, "grace", e.cfg.AbandonGrace)
	x.rec.Abandoned()
	x.rec.Finished(observe.LeaseLost, e.clock.Now().Sub(x.startedAt))
	x.span.End(observe.LeaseLost, "abandoned past its deadline", e.clock.Now())
	e.points.abandoned.Report(x.job.ID)
	x.p.done()
	e.notifyEnded()
}

// notifyEnded tells a shutdown waiting for the running jobs to recount.
func (e *Engine) notifyEnded() {
	select {
	case e.jobEnded <- struct{}{}:
	default:
	}
}

func (e *Engine) runningCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.running)
}

func (e *Engine) runningJobs() []*execution {
	e.mu.Lock()
	defer e.mu.Unlock()
	xs := make([]*execution, 0, len(e.running))
	for x := range e.running {
		xs = append(xs, x)
	}
	return xs
}

// drain waits for the running handlers, cancels those that outlive
// ShutdownTimeout, and gives up on those that ignore the cancel.
func (e *Engine) drain() {
	if e.waitIdle(e.cfg.ShutdownTimeout) {
		return
	}
	xs := e.runningJobs()
	e.log.Warn("engine: shutdown timeout passed; cancelling running jobs, which will be released", "jobs", len(xs))
	for _, x := range xs {
		x.cancel(ErrShutdown)
	}
	if e.waitIdle(e.cfg.StopGrace) {
		return
	}
	e.mu.Lock()
	xs = make([]*execution, 0, len(e.running))
	for x := range e.running {
		xs = append(xs, x)
	}
	clear(e.running)
	clear(e.byJob)
	e.mu.Unlock()
	for _, x := range xs {
		e.log.Error("engine: handler still running after its cancel; releasing its job without waiting for it",
			"job_id", x.job.ID, "kind", x.job.Kind)
		e.fin.add(x.finishItem(store.Outcome{Lease: x.lease, Outcome: job.Outcome{Status: store.OutcomeReleased}}, e.clock.Now().Sub(x.startedAt)))
	}
}

// waitIdle waits up to d for no job to be running.
func (e *Engine) waitIdle(d time.Duration) bool {
	t := e.clock.NewTimer(d)
	defer t.Stop()
	for e.runningCount() > 0 {
		select {
		case <-e.jobEnded:
		case <-t.C():
			return e.runningCount() == 0
		}
	}
	return true
}
