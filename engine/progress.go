package engine

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// progress throttles one job's progress writes. set only records the
// value and never blocks on the database; the job's flusher goroutine
// writes the latest value at most once per ProgressInterval, at once on a
// phase change; stop ends the flusher and writes what is left. The
// flusher starts with the first value set: a job that never reports
// progress, most of them, costs no goroutine.
type progress struct {
	x *execution
	// launch starts the flusher (set by start).
	launch func()

	mu      sync.Mutex
	pending *job.Progress // latest value not yet written
	urgent  bool          // pending changed the phase
	phase   string        // phase of the latest value set
	stopped bool

	failing bool // a write failed: log the next failure no more; flusher's own

	// The flusher's channels, made (under mu) when set launches it: nil
	// until then.
	kick  chan struct{}
	stopc chan struct{}
	done  chan struct{}
}

func (p *progress) init(x *execution, phase string) {
	p.x = x
	p.phase = phase
}

// start arms the flusher, which the first set launches; its writes use
// ctx, which outlives the handler's context: progress is worth keeping
// when the handler was cancelled.
func (p *progress) start(ctx context.Context) {
	p.launch = func() {
		go p.loop(ctx, p.x.e.clock, p.x.e.cfg.ProgressInterval)
	}
}

func (p *progress) set(v job.Progress) {
	v.Items = bytes.Clone(v.Items) // the caller may reuse its buffer
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	if v.Phase != p.phase {
		p.urgent = true
		p.phase = v.Phase
	}
	p.pending = &v
	if p.done == nil {
		p.kick = make(chan struct{}, 1)
		p.stopc = make(chan struct{})
		p.done = make(chan struct{})
		p.launch()
	}
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// take returns the value to write now or, when the throttle holds it
// back, how long to wait.
func (p *progress) take(now, last time.Time, interval time.Duration) (*job.Progress, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending == nil {
		return nil, 0
	}
	if !p.urgent && !last.IsZero() {
		if wait := interval - now.Sub(last); wait > 0 {
			return nil, wait
		}
	}
	v := p.pending
	p.pending, p.urgent = nil, false
	return v, 0
}

// requeue keeps a value whose write failed, unless a newer one came.
func (p *progress) requeue(v *job.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending == nil {
		p.pending = v
	}
}

func (p *progress) loop(ctx context.Context, c clock.Clock, interval time.Duration) {
	defer close(p.done)
	var (
		timer  clock.Timer
		timerC <-chan time.Time
		last   time.Time
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	arm := func(d time.Duration) {
		if timerC != nil {
			return
		}
		if timer == nil {
			timer = c.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		timerC = timer.C()
	}
	for {
		select {
		case <-p.stopc:
			return
		case <-ctx.Done():
			return
		case <-p.kick:
		case <-timerC:
			timerC = nil
		}
		v, wait := p.take(c.Now(), last, interval)
		if v == nil {
			if wait > 0 {
				arm(wait)
			}
			continue
		}
		last = c.Now()
		if !p.write(ctx, *v) {
			p.requeue(v)
			arm(interval)
		}
	}
}

// write stores v; false when it should be tried again (not when the
// store refused it for good). A lost lease or a cancel request cancels
// the handler.
func (p *progress) write(ctx context.Context, v job.Progress) bool {
	x := p.x
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	cancelRequested, err := x.e.store.JobSetProgress(cctx, x.lease, v)
	cancel()
	if err == nil {
		p.failing = false
	}
	switch {
	case errors.Is(err, job.ErrLeaseLost):
		x.leaseLost("progress")
	case store.Refused(err):
		// The same value would be refused again: drop it, and let the
		// next one through.
		x.e.log.Warn("engine: the store refused a job's progress; dropping it", "job_id", x.job.ID, "err", err)
	case err != nil:
		if ctx.Err() == nil && !p.failing {
			p.failing = true
			x.e.log.Warn("engine: progress write failed; retrying", "job_id", x.job.ID, "err", err)
		}
		return false
	case cancelRequested:
		x.cancel(ErrCancelRequested)
	}
	return true
}

// stop ends the flusher and writes the value it still holds, so that the
// last progress is stored before the outcome.
func (p *progress) stop(ctx context.Context) {
	p.mu.Lock()
	p.stopped = true
	stopc, done := p.stopc, p.done
	p.mu.Unlock()
	if done != nil {
		close(stopc)
		<-done
	}
	p.mu.Lock()
	v := p.pending
	p.pending = nil
	p.mu.Unlock()
	if v != nil {
		p.write(ctx, *v)
	}
}
