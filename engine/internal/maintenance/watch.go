package maintenance

import (
	"context"
	"sync"
	"time"
)

// Term is what a leader duty can know of the term it runs under; TermOf
// reads it from the duty's context.
type Term struct {
	// Began is when the term began: the start of the election attempt
	// that won it, on the runner's clock.
	Began time.Time
	// ContactSince is when this node's unbroken contact with the database
	// began, before Began: since then every election attempt of this node
	// succeeded and, with a LeaderWatcher, its presence held. Zero when
	// the attempt that won the term ended a break (or was the first).
	ContactSince time.Time
}

// HandOver reports the span [from, to) before this term during which this
// node was in contact with the database and did not lead: whatever a
// leader duty left undone then, it left undone because the leadership
// was changing hands (or another node led), not because every node was
// cut off from the database. ok is false when the span is empty.
func (t Term) HandOver() (from, to time.Time, ok bool) {
	if t.ContactSince.IsZero() || !t.ContactSince.Before(t.Began) {
		return time.Time{}, time.Time{}, false
	}
	return t.ContactSince, t.Began, true
}

type termKey struct{}

// WithTerm returns ctx carrying t, as the context of a leader duty's pass
// does: for a caller that runs a pass itself (a test).
func WithTerm(ctx context.Context, t Term) context.Context {
	return context.WithValue(ctx, termKey{}, t)
}

// TermOf returns the term a leader duty's pass runs under, from its
// context; ok is false outside a leader duty.
func TermOf(ctx context.Context) (t Term, ok bool) {
	t, ok = ctx.Value(termKey{}).(Term)
	return t, ok
}

// What a LeaderWatcher reports, as TestSignals.Watched names it.
const (
	watchPresent     = "present"
	watchLost        = "lost"
	watchVacated     = "vacated"
	watchUnavailable = "unavailable"
)

// watchFeed carries what the elector's watch reports to the election
// loop, which acts on it when kick fires: the watch never waits for the
// loop, which may be waiting for an attempt.
type watchFeed struct {
	kick chan struct{} // capacity 1: something was reported

	mu      sync.Mutex
	lost    bool     // the presence was lost since the loop last looked
	attempt bool     // attempt now: the presence is back, or the term free
	events  []string // what was reported, for TestSignals.Watched
}

func (f *watchFeed) report(event string) {
	f.mu.Lock()
	switch event {
	case watchLost:
		f.lost = true
	case watchPresent, watchVacated:
		f.attempt = true
	}
	f.events = append(f.events, event)
	f.mu.Unlock()
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// take returns and clears what was reported since the last take.
func (f *watchFeed) take() (lost, attempt bool, events []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	lost, attempt, events = f.lost, f.attempt, f.events
	f.lost, f.attempt, f.events = false, false, nil
	return lost, attempt, events
}

// watch starts the elector's LeaderWatch on wg when it has one, and
// returns the feed of its reports; nil when the elector cannot watch.
func (r *Runner) watch(ctx context.Context, wg *sync.WaitGroup) *watchFeed {
	w, ok := r.cfg.Elector.(LeaderWatcher)
	if !ok {
		return nil
	}
	f := &watchFeed{kick: make(chan struct{}, 1)}
	wg.Go(func() {
		err := w.LeaderWatch(ctx, r.cfg.Election, r.cfg.Node, r.cfg.Term,
			func(present bool) {
				if present {
					f.report(watchPresent)
				} else {
					f.report(watchLost)
				}
			},
			func() { f.report(watchVacated) })
		if err != nil && ctx.Err() == nil {
			r.log.Info("maintenance: no fast leader hand-over; a leader that dies is replaced when its term runs out", "node", r.cfg.Node, "term", r.cfg.Term, "why", err)
			f.report(watchUnavailable)
		}
	})
	return f
}
