package maintenance

import (
	"context"
	"sync"
	"time"
)

// attemptTimeout bounds one election attempt: a database that hangs must
// not hang the election. A term that runs out meanwhile ends on its own.
const attemptTimeout = 30 * time.Second

// resignTimeout bounds the resignation when Run stops: a database that
// does not answer must not hold a shutdown up (the term then runs out by
// itself).
const resignTimeout = 5 * time.Second

// term is one period of leadership of this node: the leader duties run
// under ctx, which ends when the term does.
type term struct {
	ctx    context.Context
	cancel context.CancelFunc
	// duties counts the leader duties' loops.
	duties sync.WaitGroup

	mu sync.Mutex
	// until is when the term ends unless renewed: the time before the
	// attempt that won or renewed it, plus Term, so never later than the
	// expiry the database recorded.
	until time.Time
}

// holds reports whether the term covers now.
func (t *term) holds(now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ctx.Err() == nil && now.Before(t.until)
}

func (t *term) extend(until time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if until.After(t.until) {
		t.until = until
	}
}

func (t *term) end() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.until
}

// attemptResult is what one election attempt answered.
type attemptResult struct {
	leads bool
	err   error
}

// elect takes part in the election until ctx ends: an attempt every
// Term/3 (sooner, with backoff, after an error); the leader duties start
// when this node wins, and stop when another node leads or when the term
// reaches its end without a renewal, even while an attempt to renew it
// still waits for the database. With a watch (feed, nil without one) it
// also attempts at once when the watch says the leader's presence ended
// or its own presence is back, and ends its own term at once when its
// presence is lost.
func (r *Runner) elect(ctx context.Context, duties []Duty, feed *watchFeed) {
	h := health{log: r.log, what: "leader election"}
	every := r.cfg.Term / 3
	var cur *term
	defer func() {
		if cur != nil {
			r.endTerm(cur, "shutting down")
			r.resign(ctx)
		}
	}()
	// contact is when this node's unbroken contact with the database
	// began (see Term.ContactSince); zero after a break.
	var contact time.Time
	var kick <-chan struct{}
	if feed != nil {
		kick = feed.kick
	}
	next := r.clock.NewTimer(0)
	defer next.Stop()
	// ends fires at the current term's end; stopped while not leading.
	ends := r.clock.NewTimer(time.Hour)
	ends.Stop()
	defer ends.Stop()
	// atEnd stops the leader duties once the term has reached its end;
	// the timer may fire a little late, or stale (a fake clock's does not
	// drain), so it is armed again while the term runs.
	atEnd := func() {
		if cur == nil {
			return
		}
		if left := cur.end().Sub(r.clock.Now()); left > 0 && cur.holds(r.clock.Now()) {
			ends.Reset(left)
			return
		}
		r.log.Warn("maintenance: the leader term ended before it could be renewed; leader duties stopped", "node", r.cfg.Node)
		r.endTerm(cur, "the term ended before it could be renewed")
		cur = nil
	}
	delay := retryMin
	for {
		select {
		case <-ctx.Done():
			return
		case <-ends.C():
			atEnd()
			continue
		case <-kick:
			lost, attempt, events := feed.take()
			if lost {
				contact = time.Time{}
				if cur != nil {
					r.log.Warn("maintenance: the leader's connection to the database failed; leader duties stopped", "node", r.cfg.Node)
					r.endTerm(cur, "its presence in the election was lost")
					cur = nil
					ends.Stop()
				}
			}
			for _, ev := range events {
				r.points.Watched.Report(ev)
			}
			if !attempt {
				continue
			}
		case <-next.C():
		}
		began := r.clock.Now()
		res := make(chan attemptResult, 1)
		go func() {
			leads, err := r.attempt(ctx)
			res <- attemptResult{leads, err}
		}()
		var got attemptResult
	waiting:
		for {
			select {
			case got = <-res:
				break waiting
			case <-ends.C():
				atEnd()
			}
		}
		if ctx.Err() != nil {
			return
		}
		after := every
		switch {
		case got.err != nil:
			// Unsure whether the renewal took: the current term, if any,
			// stands until its end.
			h.fail(got.err)
			contact = time.Time{}
			after = min(delay, every)
			delay = nextRetry(delay)
		case !got.leads:
			h.ok()
			delay = retryMin
			if contact.IsZero() {
				contact = began
			}
			if cur != nil {
				r.endTerm(cur, "another node leads")
				cur = nil
			}
		default:
			h.ok()
			delay = retryMin
			if contact.IsZero() {
				contact = began
			}
			if cur != nil && !cur.holds(r.clock.Now()) {
				atEnd() // ended while the attempt ran: a new term begins
			}
			until := began.Add(r.cfg.Term)
			if cur == nil {
				cur = r.beginTerm(ctx, until, duties, Term{Began: began, ContactSince: contact})
			} else {
				cur.extend(until)
			}
		}
		if cur != nil {
			ends.Reset(cur.end().Sub(r.clock.Now()))
		} else {
			ends.Stop()
		}
		next.Reset(after)
		r.points.Attempt.Report(cur != nil && cur.holds(r.clock.Now()))
	}
}

func (r *Runner) attempt(ctx context.Context) (bool, error) {
	cctx, cancel := context.WithTimeout(ctx, min(attemptTimeout, r.cfg.Term))
	defer cancel()
	return r.cfg.Elector.LeaderAttempt(cctx, r.cfg.Election, r.cfg.Node, r.cfg.Term)
}

// beginTerm starts the leader duties under a term that ends at until
// unless extended; their contexts carry info (see TermOf).
func (r *Runner) beginTerm(ctx context.Context, until time.Time, duties []Duty, info Term) *term {
	tctx, cancel := context.WithCancel(WithTerm(ctx, info))
	t := &term{ctx: tctx, cancel: cancel, until: until}
	r.current.Store(t)
	r.log.Info("maintenance: this node leads", "node", r.cfg.Node, "election", r.cfg.Election, "duties", names(duties))
	for _, d := range duties {
		t.duties.Go(func() { r.loop(tctx, d) })
	}
	return t
}

// endTerm stops t's leader duties and waits for them to return.
func (r *Runner) endTerm(t *term, why string) {
	t.cancel()
	t.duties.Wait()
	r.current.CompareAndSwap(t, nil)
	r.log.Info("maintenance: this node no longer leads", "node", r.cfg.Node, "election", r.cfg.Election, "why", why)
	r.points.TermEnded.Report(why)
}

// resign gives the leadership up, so that another node need not wait for
// the term to run out.
func (r *Runner) resign(ctx context.Context) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resignTimeout)
	defer cancel()
	if err := r.cfg.Elector.LeaderResign(rctx, r.cfg.Election, r.cfg.Node); err != nil {
		r.log.Warn("maintenance: resign the leadership", "node", r.cfg.Node, "err", err)
	}
}

func names(duties []Duty) []string {
	ns := make([]string, len(duties))
	for i, d := range duties {
		ns[i] = d.Name
	}
	return ns
}
