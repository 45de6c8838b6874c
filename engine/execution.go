package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/observe"
	"github.com/jobd/jobd/step"
	"github.com/jobd/jobd/store"
)

// execution is one claimed job while this node runs it.
type execution struct {
	e        *Engine
	p        *producer
	job      *job.Job
	lease    store.Lease
	cancel   context.CancelCauseFunc
	progress progress
	lost     atomic.Bool // the loss of the lease was logged
	// renewAt is when the heartbeat renews this lease next.
	renewAt atomicTime
	// rec records the execution's outcome, span traces it; startedAt is
	// its claim.
	rec       observe.KindRecorder
	span      observe.Span
	startedAt time.Time
	// stopDeadline releases the timer of the handler's deadline, if its
	// job has one; abandoned says the engine gave the handler up, past
	// the deadline and the grace (abandon); ended is closed when run
	// returns.
	stopDeadline context.CancelFunc
	abandoned    atomic.Bool
	ended        chan struct{}
	// steps are the steps the handler recorded (durable.go).
	steps steps
}

// atomicTime is a time.Time that goroutines share without a lock.
type atomicTime struct{ v atomic.Int64 }

func (a *atomicTime) Load() time.Time   { return time.Unix(0, a.v.Load()) }
func (a *atomicTime) Store(t time.Time) { a.v.Store(t.UnixNano()) }

func newExecution(p *producer, j *job.Job, cancel context.CancelCauseFunc) *execution {
	x := &execution{
		e:      p.e,
		p:      p,
		job:    j,
		lease:  store.Lease{ID: j.ID, Token: j.LeaseToken, Owner: p.e.cfg.Node},
		cancel: cancel,
		ended:  make(chan struct{}),
	}
	x.progress.init(x, j.Progress.Phase)
	return x
}

// run calls the handler with ctx, flushes its last progress and reports
// its outcome. workCtx carries the engine's own store calls.
func (x *execution) run(ctx, workCtx context.Context) {
	defer close(x.ended)
	x.progress.start(workCtx)
	res, err := x.call(step.WithRecorder(ctx, x))
	ran := x.e.clock.Now().Sub(x.startedAt)
	x.progress.stop(workCtx)
	if w := step.AsWait(err); w != nil && ctx.Err() == nil {
		x.cancel(nil)
		if x.stopDeadline != nil {
			x.stopDeadline()
		}
		x.e.endWaiting(workCtx, x, w, ran)
		return
	}
	out := x.outcome(ctx, res, err)
	x.cancel(nil)
	if x.stopDeadline != nil {
		x.stopDeadline()
	}
	if err != nil && errors.Is(context.Cause(ctx), ErrTimedOut) {
		// The attempt is over: the store refuses its writes, and the
		// reaper ends it "timed-out".
		x.e.endTimedOut(x, ran)
		return
	}
	x.e.end(x, out, ran)
}

// withDeadline gives ctx, the handler's, the deadline of x's attempt
// (cause ErrTimedOut), and watches for a handler that outlives it by the
// engine's AbandonGrace. A job without a deadline gets neither.
func (x *execution) withDeadline(ctx context.Context) context.Context {
	d := x.job.Deadline
	if d == nil {
		return ctx
	}
	// The deadline is the store's time; a context's is the system
	// clock's: the engine's clock says how far away it is.
	left := d.Sub(x.e.clock.Now())
	ctx, x.stopDeadline = context.WithDeadlineCause(ctx, time.Now().Add(left), ErrTimedOut)
	go x.watchAbandon(left + x.e.cfg.AbandonGrace)
	return ctx
}

// watchAbandon gives the handler up (Engine.abandon) unless it returns
// within after.
func (x *execution) watchAbandon(after time.Duration) {
	t := x.e.clock.NewTimer(after)
	defer t.Stop()
	select {
	case <-x.ended:
	case <-x.e.stopped:
	case <-t.C():
		x.e.abandon(x)
	}
}

func (x *execution) call(ctx context.Context) (res json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			x.e.log.Error("engine: handler panicked", "job_id", x.job.ID, "kind", x.job.Kind,
				"panic", r, "stack", string(debug.Stack()))
			res, err = nil, fmt.Errorf("panic: %v", r)
		}
	}()
	h := x.e.handler(x.job.Kind)
	if h == nil {
		return nil, Permanent(fmt.Errorf("no handler for kind %q on node %s", x.job.Kind, x.e.cfg.Node))
	}
	return h(ctx, x)
}

// outcome turns what the handler returned, and why its context was
// cancelled, into the report for the store.
func (x *execution) outcome(ctx context.Context, res json.RawMessage, err error) store.Outcome {
	out := store.Outcome{Lease: x.lease}
	if err == nil {
		if cerr := job.CheckJSON("result", res); cerr != nil {
			// No store would keep it, and the handler would return the
			// same again: fail the job, saying why.
			x.e.log.Warn("engine: the handler's result cannot be stored; failing the job", "job_id", x.job.ID,
				"kind", x.job.Kind, "err", cerr)
			out.Status = store.OutcomeSucceeded
			return refusedOutcome(out, cerr)
		}
		out.Status = store.OutcomeSucceeded
		out.Result = res
		return out
	}
	out.Error = truncate(storableText(err.Error()), maxErrorBytes)
	cause := context.Cause(ctx)
	switch {
	case ctx.Err() != nil && errors.Is(cause, ErrCancelRequested):
		out.Status = store.OutcomeCanceled
		return out
	case ctx.Err() != nil && errors.Is(cause, ErrShutdown):
		out.Status = store.OutcomeReleased
		out.Error = ""
		return out
	}
	out.Status = store.OutcomeFailed
	var perm *permanentError
	var after *retryAfterError
	var throttle *throttleError
	switch {
	case errors.As(err, &throttle):
		out.Throttle = throttle.delay
	case errors.As(err, &perm):
	case errors.As(err, &after):
		out.Retryable = true
		out.RetryDelay = after.delay
	default:
		out.Retryable = true
		out.RetryDelay = x.p.cfg.Backoff.Delay(x.job.Attempt, nil)
	}
	return out
}

// finishItem is x's outcome for the finisher; ran is how long its
// handler ran.
func (x *execution) finishItem(out store.Outcome, ran time.Duration) finishItem {
	return finishItem{out: out, queue: x.job.Queue, kind: x.job.Kind, attempt: x.job.Attempt, locked: x.job.LockKey != "",
		rec: x.rec, span: x.span, ran: ran}
}

// leaseLost cancels the handler because the node no longer holds the job.
func (x *execution) leaseLost(why string) {
	if x.lost.CompareAndSwap(false, true) {
		x.e.log.Warn("engine: lease lost; cancelling the handler", "job_id", x.job.ID,
			"kind", x.job.Kind, "attempt", x.job.Attempt, "seen_by", why)
	}
	x.cancel(ErrLeaseLost)
}

func (x *execution) saveCheckpoint(ctx context.Context, raw json.RawMessage) error {
	_, err := x.e.store.JobSetCheckpoint(ctx, x.lease, raw) // a cancel reaches the handler by its notification
	if errors.Is(err, job.ErrLeaseLost) {
		x.leaseLost("checkpoint")
	}
	if err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	return nil
}
