package maintenance_test

import (
	"context"
	"testing"
	"time"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/engine/internal/maintenance"
	"github.com/jobd/jobd/internal/testutil/testsignal"
	"github.com/jobd/jobd/store"
)

// scriptedWatcher is a real store whose LeaderWatch reports what the
// test sends it: the presence held or lost, the leader gone.
type scriptedWatcher struct {
	store.Store
	present chan bool
	vacate  chan struct{}
}

func newScriptedWatcher(s store.Store) *scriptedWatcher {
	return &scriptedWatcher{Store: s, present: make(chan bool), vacate: make(chan struct{})}
}

func (w *scriptedWatcher) LeaderWatch(ctx context.Context, name, node string, ttl time.Duration, present func(bool), vacated func()) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case p := <-w.present:
			present(p)
		case <-w.vacate:
			vacated()
		}
	}
}

// termDuty is a leader duty that reports the term of each of its first
// passes.
func termDuty(terms chan<- maintenance.Term) maintenance.Duty {
	return maintenance.Duty{Name: "d", Interval: time.Hour, Leader: true, Pass: func(ctx context.Context) error {
		t, _ := maintenance.TermOf(ctx)
		terms <- t
		return nil
	}}
}

// TestWatchLostEndsTerm: a leader whose presence is lost stops its
// leader duties at once, long before its term's end, and leads again
// once its presence is back, at once too (the clock does not move); its
// new term follows a break of contact, so no hand-over span precedes it.
func TestWatchLostEndsTerm(t *testing.T) {
	withElector(t, func(t *testing.T, s store.Store, clk *clock.Fake) {
		w := newScriptedWatcher(s)
		r, sig := newRunner(t, w, clk, "a")
		testsignal.Of(&sig.Watched).Init()
		terms := make(chan maintenance.Term, 4)
		mustAdd(t, r, termDuty(terms))
		run(t, r)
		if !testsignal.Of(&sig.Attempt).Wait(t, "the first attempt") {
			t.Fatal("a does not lead")
		}
		first := recvOrFail(t, terms, "the first pass")
		if _, _, ok := first.HandOver(); ok {
			t.Errorf("the first term %+v has a hand-over span", first)
		}
		w.present <- true
		testsignal.Of(&sig.Watched).WaitFor(t, "the presence", func(ev string) bool { return ev == "present" })
		w.present <- false
		why := testsignal.Of(&sig.TermEnded).Wait(t, "the term to end")
		if why != "its presence in the election was lost" || r.Leading() {
			t.Fatalf("the term ended %q, leading %t", why, r.Leading())
		}
		w.present <- true
		if !testsignal.Of(&sig.Attempt).WaitFor(t, "an attempt that leads", func(leads bool) bool { return leads }) {
			t.Fatal("unreachable")
		}
		second := recvOrFail(t, terms, "the second term's pass")
		if _, _, ok := second.HandOver(); ok {
			t.Errorf("the term after a lost presence %+v has a hand-over span", second)
		}
	})
}

// TestWatchVacated: a node that was told the leader is gone attempts at
// once (the clock does not reach its next attempt) and leads; its term
// says that it was in contact since its first attempt, so whatever fell
// due in between fell due during a hand-over.
func TestWatchVacated(t *testing.T) {
	withElector(t, func(t *testing.T, s store.Store, clk *clock.Fake) {
		ctx := t.Context()
		if leads, err := s.LeaderAttempt(ctx, maintenance.DefaultElection, "x", 30*time.Second); err != nil || !leads {
			t.Fatalf("x's attempt: %t %v", leads, err)
		}
		w := newScriptedWatcher(s)
		b, sig := newRunner(t, w, clk, "b")
		terms := make(chan maintenance.Term, 4)
		mustAdd(t, b, termDuty(terms))
		run(t, b)
		if testsignal.Of(&sig.Attempt).Wait(t, "b's first attempt") {
			t.Fatal("b leads beside x")
		}
		contact := clk.Now()
		clk.Advance(5 * time.Second) // before b's next attempt (10s)
		if err := s.LeaderResign(ctx, maintenance.DefaultElection, "x"); err != nil {
			t.Fatal(err)
		}
		w.vacate <- struct{}{}
		if !testsignal.Of(&sig.Attempt).Wait(t, "b's attempt on the news") || !b.Leading() {
			t.Fatal("b does not lead after x was gone")
		}
		term := recvOrFail(t, terms, "b's first pass")
		from, to, ok := term.HandOver()
		if !ok || !from.Equal(contact) || !to.Equal(contact.Add(5*time.Second)) {
			t.Fatalf("b's term %+v: hand-over [%v, %v) %t, want [%v, +5s)", term, from, to, ok, contact)
		}
	})
}
