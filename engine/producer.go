package engine

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/observe"
	"github.com/jobd/jobd/store"
)

// maxClaim caps the jobs one claim asks for.
const maxClaim = 1000

// minBatch is how many slots must be free before a busy producer claims
// again: a quarter of its concurrency, at most a quarter of maxClaim. A
// producer with nothing running claims for a single free slot, so an idle
// worker starts a new job at once; a busy one claims in batches instead of
// one job per finished job, which is what keeps the claim cheap per job.
func (p *producer) minBatch() int {
	return max(1, min(p.cfg.Concurrency/4, maxClaim/4))
}

// producer claims the jobs of one queue and starts their handlers, keeping
// at most Concurrency of them running.
type producer struct {
	e      *Engine
	cfg    QueueConfig
	caps   []string // cfg.Capabilities, normalised
	active atomic.Int64
	// wake receives (without blocking) when the queue may have jobs or a
	// slot was freed.
	wake chan struct{}
	// ahead is where the wake-ups since the last claim say jobs may have
	// become available.
	ahead wokenAhead
	// cursor is the last job the claims took, owned by run's goroutine;
	// nil when the next claim starts from the best job.
	cursor *store.ClaimCursor
	// fromTop is when the last claim that started from the best job
	// began, owned by run's goroutine.
	fromTop time.Time
	// kinds holds the observer's recorder of each kind of the queue,
	// owned by run's goroutine.
	kinds map[string]observe.KindRecorder
	// throttles counts the throttles of the queue's jobs handed to the
	// finisher and not yet written: until they are, the producer claims
	// nothing, so that this node starts no job its throttle holds back.
	throttles atomic.Int64
}

// recorder returns the observer's recorder of kind, resolved once.
func (p *producer) recorder(kind string) observe.KindRecorder {
	r, ok := p.kinds[kind]
	if !ok {
		if p.kinds == nil {
			p.kinds = make(map[string]observe.KindRecorder)
		}
		r = p.e.cfg.Observer.Kind(p.cfg.Queue, kind)
		p.kinds[kind] = r
	}
	return r
}

// wakeUp tells the producer that its queue may have new jobs, possibly
// better than those it would claim next.
func (p *producer) wakeUp() {
	p.wakeFrom(nil)
}

// wakeFrom tells the producer that its queue may have new jobs, none of
// which sorts before earliest in claim order (nil: they may sort
// anywhere).
func (p *producer) wakeFrom(earliest *store.ClaimBound) {
	p.ahead.add(earliest)
	p.kick()
}

func (p *producer) kick() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// run claims until ctx ends. It claims at once on start, on each wake-up,
// and otherwise at most once per PollInterval. Claims run on workCtx, so
// that a claim the database committed is never lost to a cancelled
// context; jobBase is the parent of the handlers' contexts.
//
// A claim of a limited or throttled queue that comes back short is tried
// again sooner than the poll (flowView.pace): within the pacing delay of
// the first short claim, which the claims that wake-ups cause meanwhile
// do not push back.
func (p *producer) run(ctx, workCtx, jobBase context.Context) {
	h := health{log: p.e.log, what: "claim", attrs: []any{"queue", p.cfg.Queue}, point: &p.e.points.health}
	t := p.e.clock.NewTimer(0)
	defer t.Stop()
	var paced time.Time // when t fires for a paced claim; zero for a poll
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		case <-t.C():
			p.ahead.add(nil)
			paced = time.Time{}
		}
		next := p.e.cfg.PollInterval
		if p.claim(ctx, workCtx, jobBase, &h) {
			next, paced = p.pace(paced)
		} else {
			paced = time.Time{}
		}
		t.Reset(next)
		p.e.points.pollArmed.Report(p.cfg.Queue)
	}
}

// pace returns the delay of the next claim after a short one, and when
// that claim is due if it is paced (zero if it is the poll): the pacing
// delay of the queue's flow control, or the earlier paced claim still
// due, else the poll.
func (p *producer) pace(paced time.Time) (time.Duration, time.Time) {
	now := p.e.clock.Now()
	d, ok := p.e.flow.pace(p.cfg.Queue, now, p.e.cfg.PollInterval)
	if !ok {
		return p.e.cfg.PollInterval, time.Time{}
	}
	if !paced.After(now) || paced.After(now.Add(d)) {
		paced = now.Add(d)
	}
	return paced.Sub(now), paced
}

// claim fills the free slots, claiming again while claims come back full,
// and retries a failing store with backoff (cut short by a wake-up, see
// pause) until it answers or ctx ends.
// It reports whether its last claim came back short: fewer jobs than free
// slots.
//
// Each claim starts a little before the last job the previous ones took
// (store.ClaimParams.After, see after), rather than walking again past the
// index entries of every job claimed since vacuum last ran; it goes back
// to the best job when a wake-up or a poll says jobs may wait ahead of
// that (startOver), and at least once per PollInterval, which finds the
// jobs that claims skipped: a busy lock_key, a row another transaction
// held, a job preferred for another worker until its window passed.
func (p *producer) claim(ctx, workCtx, jobBase context.Context, h *health) (short bool) {
	delay := retryMin
	for ctx.Err() == nil {
		active := int(p.active.Load())
		n := min(p.cfg.Concurrency-active, maxClaim, p.throttleRoom())
		if n <= 0 || (active > 0 && n < p.minBatch()) {
			return false // a finishing job wakes us
		}
		began := p.e.clock.Now()
		if p.startOver(began) {
			p.cursor = nil
		}
		after := p.after()
		if after == nil {
			p.fromTop = began
		}
		cctx, cancel := context.WithTimeout(workCtx, callTimeout)
		jobs, err := p.e.store.JobClaim(cctx, store.ClaimParams{Queue: p.cfg.Queue, Max: n, Owner: p.e.cfg.Node,
			Capabilities: p.caps, PreferWindow: p.e.cfg.PreferWindow, After: after, DefaultTimeout: p.cfg.Timeout})
		cancel()
		claimedAt := p.e.clock.Now()
		if err == nil {
			p.e.cfg.Observer.Claimed(p.cfg.Queue, len(jobs), claimedAt.Sub(began))
		}
		if err != nil {
			if workCtx.Err() != nil {
				return false
			}
			h.fail(err)
			if !p.pause(ctx, delay) {
				return false
			}
			delay = nextRetry(delay)
			continue
		}
		h.ok()
		delay = retryMin
		if ctx.Err() != nil {
			// Shutting down: hand the jobs straight back.
			for _, j := range jobs {
				rec := p.recorder(j.Kind)
				rec.Started(claimedAt.Sub(j.RunAt)) // claimed all the same
				p.e.fin.add(finishItem{
					out:   store.Outcome{Lease: store.Lease{ID: j.ID, Token: j.LeaseToken, Owner: p.e.cfg.Node}, Outcome: job.Outcome{Status: store.OutcomeReleased}},
					queue: j.Queue, kind: j.Kind, attempt: j.Attempt, rec: rec, span: observe.Nop{},
				})
			}
			return false
		}
		for _, j := range jobs {
			p.start(workCtx, jobBase, j, claimedAt)
		}
		if len(jobs) > 0 {
			p.cursor = store.CursorOf(jobs[len(jobs)-1])
		}
		if len(jobs) < n {
			return true
		}
	}
	return false
}

// pause waits d after a failed claim, or until a wake-up comes: the
// store's listener reconnected, which says that the database answers
// again, so the claim is tried at once rather than at the end of a
// backoff that grew while the database was away. False when ctx ended.
func (p *producer) pause(ctx context.Context, d time.Duration) bool {
	t := p.e.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-p.wake:
		return true
	case <-ctx.Done():
		return false
	}
}

// cursorSlack is how far before the last job it took a claim starts: the
// jobs of a transaction that commits after a claim may sort before the
// jobs that claim took (their run_at is when their insert began, on that
// node's clock), and those within cursorSlack are found without a walk
// from the best job. A wake-up about jobs further back sends the claim
// there (startOver).
const cursorSlack = 250 * time.Millisecond

// after is where the next claim starts: cursorSlack before the cursor,
// or nil for the best job.
func (p *producer) after() *store.ClaimCursor {
	if p.cursor == nil {
		return nil
	}
	return &store.ClaimCursor{Priority: p.cursor.Priority, RunAt: p.cursor.RunAt.Add(-cursorSlack)}
}

// startOver reports whether the claim beginning at now must start from
// the best job: a wake-up or a poll since the last claim said jobs may
// wait before where it would start, or the last claim from the best job
// began a PollInterval ago or more.
func (p *producer) startOver(now time.Time) bool {
	anywhere, earliest := p.ahead.take()
	if p.cursor == nil {
		return false
	}
	if anywhere || now.Sub(p.fromTop) >= p.e.cfg.PollInterval {
		return true
	}
	return earliest != nil && !earliest.After(*p.after())
}

// wokenAhead gathers the wake-ups between two claims: whether one may be
// about jobs anywhere in claim order, and else a lower bound of the jobs
// they are about.
type wokenAhead struct {
	mu       sync.Mutex
	anywhere bool
	earliest *store.ClaimBound
}

// add records a wake-up about jobs at or after earliest (nil: anywhere).
func (w *wokenAhead) add(earliest *store.ClaimBound) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case earliest == nil:
		w.anywhere = true
	case w.earliest == nil:
		b := *earliest
		w.earliest = &b
	default:
		*w.earliest = w.earliest.Least(*earliest)
	}
}

// take returns what add recorded since the last take, and forgets it.
func (w *wokenAhead) take() (anywhere bool, earliest *store.ClaimBound) {
	w.mu.Lock()
	defer w.mu.Unlock()
	anywhere, earliest = w.anywhere, w.earliest
	w.anywhere, w.earliest = false, nil
	return anywhere, earliest
}

// start runs the handler of j, claimed at at.
func (p *producer) start(workCtx, jobBase context.Context, j *job.Job, at time.Time) {
	if p.e.log.Enabled(workCtx, slog.LevelDebug) {
		p.e.log.Debug("engine: job claimed", "job_id", j.ID, "queue", j.Queue, "kind", j.Kind, "attempt", j.Attempt)
	}
	rec := p.recorder(j.Kind)
	rec.Started(at.Sub(j.RunAt))
	ctx, cancel := context.WithCancelCause(jobBase)
	ctx, span := p.e.cfg.Tracer.StartJob(ctx, j, at)
	x := newExecution(p, j, cancel)
	x.rec, x.span, x.startedAt = rec, span, at
	ctx = x.withDeadline(ctx)
	p.active.Add(1)
	p.e.track(x)
	p.e.goroutines.run(func() { x.run(ctx, workCtx) })
}

// throttleRoom is how many jobs a claim may take as far as the queue's
// throttles go: none while a throttle one of its jobs reported is not yet
// written (throttleWritten wakes the loop), else any number.
func (p *producer) throttleRoom() int {
	if p.throttles.Load() > 0 {
		return 0
	}
	return maxClaim
}

// throttleWritten is told that a throttle of one of the queue's jobs was
// written (or dropped): the claims may resume.
func (p *producer) throttleWritten() {
	p.throttles.Add(-1)
	p.wakeUp()
}

// done frees the slot of a job that ended and wakes the loop to refill it.
func (p *producer) done() {
	p.active.Add(-1)
	p.kick()
}
