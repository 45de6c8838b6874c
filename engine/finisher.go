package engine

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/observe"
	"github.com/jobd/jobd/store"
)

// maxFinishBatch caps the outcomes written by one JobFinish call.
const maxFinishBatch = 1000

// finishItem is one outcome waiting to be written, with what the logs
// and the wake-ups need to know of its job.
type finishItem struct {
	out     store.Outcome
	queue   string
	kind    string
	attempt int
	// locked: the job held a lock_key, which its end frees for another.
	locked bool
	// rec records the outcome and span ends with it (never nil); ran is
	// how long the handler ran.
	rec  observe.KindRecorder
	span observe.Span
	ran  time.Duration
	// refused: out replaces an outcome the store refused (refusedOutcome).
	refused bool
	// throttled is the producer whose claims wait for this outcome, a
	// throttle, to be written (producer.throttleRoom); nil for none.
	throttled *producer
}

// finisher writes the outcomes of the whole engine in batches: one
// JobFinish call at a time, carrying everything that piled up while the
// previous one ran, so a busy node writes few large batches and an idle
// one writes each outcome at once.
type finisher struct {
	e *Engine

	mu      sync.Mutex
	pending []finishItem

	kick chan struct{}
}

func (f *finisher) add(it finishItem) {
	f.mu.Lock()
	f.pending = append(f.pending, it)
	f.mu.Unlock()
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

func (f *finisher) take() []finishItem {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := min(len(f.pending), maxFinishBatch)
	batch := f.pending[:n:n]
	f.pending = f.pending[n:]
	if len(f.pending) == 0 {
		f.pending = nil
	}
	return batch
}

func (f *finisher) putBack(batch []finishItem) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending = append(batch, f.pending...)
}

// run writes outcomes until stop is closed, then writes what is left and
// returns how many outcomes it could not write (ctx ended first).
func (f *finisher) run(ctx context.Context, stop <-chan struct{}) (unwritten int) {
	h := health{log: f.e.log, what: "write job outcomes", point: &f.e.points.health}
	for {
		select {
		case <-f.kick:
			f.flush(ctx, &h)
		case <-stop:
			f.flush(ctx, &h)
			f.mu.Lock()
			defer f.mu.Unlock()
			return len(f.pending)
		}
	}
}

// flush writes batches until none is pending, retrying a failing store
// with backoff (outcomes are fenced by their lease token, so writing one
// twice is harmless). It gives up only when ctx ends. A batch the store
// refuses for good (store.Refused: a value it cannot keep) is split until
// the outcomes it refuses are alone: each of those fails its job instead
// (refusedOutcome), and the rest are written, so that one bad outcome
// never holds back the others.
func (f *finisher) flush(ctx context.Context, h *health) {
	delay := retryMin
	for {
		batch := f.take()
		if len(batch) == 0 {
			return
		}
		res, err := f.write(ctx, batch)
		if err != nil {
			f.putBack(batch)
			if ctx.Err() != nil {
				return
			}
			h.fail(err)
			if !sleep(ctx, f.e.clock, delay) {
				return
			}
			delay = nextRetry(delay)
			continue
		}
		h.ok()
		delay = retryMin
		f.report(batch, res)
	}
}

// write applies batch's outcomes, isolating those the store refuses for
// good (see flush). It fails only with an error that may pass (the
// database unreachable, a timeout); batch's items then hold what it tried
// last.
func (f *finisher) write(ctx context.Context, batch []finishItem) ([]store.FinishResult, error) {
	outs := make([]store.Outcome, len(batch))
	for i, it := range batch {
		outs[i] = it.out
	}
	began := f.e.clock.Now()
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	res, err := f.e.store.JobFinish(cctx, outs)
	cancel()
	if err == nil {
		f.e.cfg.Observer.FinishBatch(len(outs), f.e.clock.Now().Sub(began))
	}
	if err == nil || !store.Refused(err) {
		return res, err
	}
	if len(batch) == 1 {
		if batch[0].refused {
			// Even the failure that replaced it: leave the job to the
			// reaper, which takes it back when its lease expires.
			f.e.log.Error("engine: the store refused a job's outcome and the failure that replaced it; dropping it",
				"job_id", batch[0].out.ID, "kind", batch[0].kind, "err", err)
			return []store.FinishResult{{Lost: true}}, nil
		}
		f.e.log.Warn("engine: the store refused a job's outcome; failing the job instead",
			"job_id", batch[0].out.ID, "kind", batch[0].kind, "outcome", batch[0].out.Status, "err", err)
		batch[0].out = refusedOutcome(batch[0].out, err)
		batch[0].refused = true
		return f.write(ctx, batch)
	}
	mid := len(batch) / 2
	left, err := f.write(ctx, batch[:mid])
	if err != nil {
		return nil, err
	}
	right, err := f.write(ctx, batch[mid:])
	if err != nil {
		return nil, err
	}
	return append(left, right...), nil
}

// refusedOutcome is the outcome that replaces out when the store refused
// it for good: a failure of the job, not retried (its handler would only
// return the same), saying why.
func refusedOutcome(out store.Outcome, why error) store.Outcome {
	what := "outcome"
	if out.Status == store.OutcomeSucceeded {
		what = "result"
	}
	return store.Outcome{Lease: out.Lease, Outcome: job.Outcome{
		Status: store.OutcomeFailed,
		Error:  truncate(storableText(what+" refused by the store: "+why.Error()), maxErrorBytes),
	}}
}

// report logs the outcomes and wakes the producers of the queues where a
// finished job freed a lock_key another job may wait for. (Jobs that went
// back to queued wake their queue through the store.)
func (f *finisher) report(batch []finishItem, res []store.FinishResult) {
	woken := make(map[string]bool)
	debug := f.e.log.Enabled(context.Background(), slog.LevelDebug)
	now := f.e.clock.Now()
	for i, it := range batch {
		if i < len(res) {
			o := observe.OutcomeOf(res[i].State, it.out.Status, res[i].Lost)
			it.rec.Finished(o, it.ran)
			it.span.End(o, it.out.Error, now)
			if it.out.Throttle > 0 && !res[i].Lost && res[i].State == job.StateQueued {
				f.e.cfg.Observer.Throttled(it.queue)
			}
		}
		if i < len(res) && res[i].Lost {
			f.e.log.Warn("engine: lease lost before the outcome was written; outcome dropped",
				"job_id", it.out.ID, "queue", it.queue, "kind", it.kind, "attempt", it.attempt, "outcome", it.out.Status)
			f.e.points.outcomeLost.Report(it.out.ID)
		} else if i < len(res) && debug {
			f.e.log.Debug("engine: job finished", "job_id", it.out.ID, "queue", it.queue, "kind", it.kind,
				"attempt", it.attempt, "outcome", it.out.Status, "state", res[i].State, "error", it.out.Error)
		}
		if it.locked && !woken[it.queue] {
			woken[it.queue] = true
			f.e.wakeQueue(it.queue)
		}
		if it.throttled != nil {
			it.throttled.throttleWritten()
		}
	}
}
