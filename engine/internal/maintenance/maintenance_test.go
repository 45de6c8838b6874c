package maintenance_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/engine/internal/maintenance"
	"github.com/jobd/jobd/internal/testutil/testsignal"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/sqlite"
)

var quiet = slog.New(slog.DiscardHandler)

// withElector runs fn on a fresh SQLite store (a real one) on a fake
// clock the test moves. The election's store rules are the conformance
// suite's, on every driver; the engine's maintenance tests run on both.
func withElector(t *testing.T, fn func(t *testing.T, s store.Store, clk *clock.Fake)) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2031, time.March, 4, 5, 6, 7, 0, time.UTC))
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "jobd.db"), sqlite.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	fn(t, s, clk)
}

// newRunner returns a runner of node on s with a 30s term, its signals
// initialised.
func newRunner(t *testing.T, e maintenance.Elector, clk clock.Clock, node string) (*maintenance.Runner, *maintenance.Points) {
	t.Helper()
	r, err := maintenance.New(maintenance.Config{Elector: e, Node: node, Term: 30 * time.Second, Clock: clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	sig := r.Points()
	testsignal.Of(&sig.Attempt).Init()
	testsignal.Of(&sig.Pass).Init()
	testsignal.Of(&sig.TermEnded).Init()
	return r, sig
}

func mustAdd(t *testing.T, r *maintenance.Runner, d maintenance.Duty) {
	t.Helper()
	if err := r.Add(d); err != nil {
		t.Fatalf("Add %q: %v", d.Name, err)
	}
}

// run runs r until the returned stop is called (or t ends); stop waits for
// Run to return.
func run(t *testing.T, r *maintenance.Runner) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var stopped atomic.Bool
	stop = func() {
		if stopped.Swap(true) {
			return
		}
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(testsignal.Timeout):
			t.Errorf("Run did not return after its context ended; the runners' goroutines:\n\n%s",
				strings.Join(runnerGoroutines(), "\n\n"))
		}
	}
	t.Cleanup(stop)
	return stop
}

func waitPass(t *testing.T, sig *maintenance.Points, duty string) error {
	t.Helper()
	return testsignal.Of(&sig.Pass).WaitFor(t, "a pass of "+duty, func(p maintenance.PassDone) bool { return p.Duty == duty }).Err
}

// hangingElector answers its first attempts from the store, then hangs
// every attempt until the attempt's context ends.
type hangingElector struct {
	store.Store
	answered atomic.Int32
	answer   int32
	hung     chan struct{}
}

func (e *hangingElector) LeaderAttempt(ctx context.Context, name, node string, ttl time.Duration) (bool, error) {
	if e.answered.Add(1) <= e.answer {
		return e.Store.LeaderAttempt(ctx, name, node, ttl)
	}
	select {
	case e.hung <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return false, ctx.Err()
}

// TestTermEndsWithoutRenewal: the database stops answering the leader's
// renewals; at the end of its term the leader duties' context ends and
// the node no longer says it leads, though the renewal still hangs.
func TestTermEndsWithoutRenewal(t *testing.T) {
	withElector(t, func(t *testing.T, s store.Store, clk *clock.Fake) {
		e := &hangingElector{Store: s, answer: 1, hung: make(chan struct{}, 1)}
		r, sig := newRunner(t, e, clk, "a")
		began, ended := make(chan struct{}, 1), make(chan error, 1)
		mustAdd(t, r, maintenance.Duty{Name: "long", Interval: time.Hour, Leader: true, Pass: func(ctx context.Context) error {
			began <- struct{}{}
			<-ctx.Done()
			ended <- ctx.Err()
			return ctx.Err()
		}})
		run(t, r)
		if !testsignal.Of(&sig.Attempt).Wait(t, "the first attempt") || !r.Leading() {
			t.Fatal("the node does not lead after winning")
		}
		recvOrFail(t, began, "the leader duty's pass to begin")
		clk.Advance(10 * time.Second) // the renewal, which hangs
		recvOrFail(t, e.hung, "the renewal to hang")
		if !r.Leading() {
			t.Fatal("the node stopped leading before its term ended")
		}
		clk.Advance(20 * time.Second) // the term's end
		if err := recvOrFail(t, ended, "the leader duty's context to end"); !errors.Is(err, context.Canceled) {
			t.Fatalf("the duty's context ended with %v", err)
		}
		if r.Leading() {
			t.Error("the node says it leads after its term ended")
		}
	})
}

// TestStopResigns: a leader that stops resigns, and another node leads at
// its next attempt, long before the term would have ended.
func TestStopResigns(t *testing.T) {
	withElector(t, func(t *testing.T, s store.Store, clk *clock.Fake) {
		a, aSig := newRunner(t, s, clk, "a")
		mustAdd(t, a, maintenance.Duty{Name: "d", Interval: time.Hour, Leader: true, Pass: func(context.Context) error { return nil }})
		stopA := run(t, a)
		if !testsignal.Of(&aSig.Attempt).Wait(t, "a's first attempt") {
			t.Fatal("a does not lead")
		}
		b, bSig := newRunner(t, s, clk, "b")
		mustAdd(t, b, maintenance.Duty{Name: "d", Interval: time.Hour, Leader: true, Pass: func(context.Context) error { return nil }})
		run(t, b)
		if testsignal.Of(&bSig.Attempt).Wait(t, "b's first attempt") {
			t.Fatal("b leads beside a")
		}
		stopA()
		if a.Leading() {
			t.Error("a says it leads after Run returned")
		}
		clk.Advance(10 * time.Second) // b's next attempt; a's term had 20s to run
		if !testsignal.Of(&bSig.Attempt).Wait(t, "b's next attempt") || !b.Leading() {
			t.Fatal("b does not lead after a resigned")
		}
		if err := waitPass(t, bSig, "d"); err != nil {
			t.Fatal(err)
		}
	})
}

// TestPanickingDuty: a duty that panics is logged as failing and retried;
// the others run.
func TestPanickingDuty(t *testing.T) {
	clk := clock.NewFake(time.Now())
	r, sig := newRunner(t, nil, clk, "a")
	mustAdd(t, r, maintenance.Duty{Name: "panics", Interval: time.Minute, Pass: func(context.Context) error { panic("boom") }})
	var calm atomic.Int32
	mustAdd(t, r, maintenance.Duty{Name: "calm", Interval: time.Minute, Pass: func(context.Context) error { calm.Add(1); return nil }})
	run(t, r)
	if err := waitPass(t, sig, "panics"); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("panicking pass: %v", err)
	}
	waitPass(t, sig, "calm")
	clk.Advance(time.Minute)
	waitPass(t, sig, "calm")
	if err := waitPass(t, sig, "panics"); err == nil {
		t.Fatal("the panicking duty was not retried")
	}
	if n := calm.Load(); n != 2 {
		t.Errorf("calm ran %d times, want 2", n)
	}
}

func TestAddRejects(t *testing.T) {
	r, sig := newRunner(t, nil, clock.NewFake(time.Now()), "a")
	pass := func(context.Context) error { return nil }
	for _, d := range []maintenance.Duty{
		{Interval: time.Second, Pass: pass},
		{Name: "no interval", Pass: pass},
		{Name: "no pass", Interval: time.Second},
		{Name: "leader without an elector", Interval: time.Second, Leader: true, Pass: pass},
	} {
		if err := r.Add(d); err == nil {
			t.Errorf("Add(%+v) accepted", d)
		}
	}
	mustAdd(t, r, maintenance.Duty{Name: "d", Interval: time.Second, Pass: pass})
	if err := r.Add(maintenance.Duty{Name: "d", Interval: time.Second, Pass: pass}); err == nil {
		t.Error("a second duty of the same name accepted")
	}
	stop := run(t, r)
	waitPass(t, sig, "d") // Run has started
	if err := r.Add(maintenance.Duty{Name: "late", Interval: time.Second, Pass: pass}); err == nil {
		t.Error("a duty added after Run accepted")
	}
	stop()
}

// TestNoGoroutineOutlivesRun: once Run returns, no goroutine of the
// runner is left, on a leader and on a node that does not lead. It runs
// alone (not in parallel), so that the only runners are its own.
func TestNoGoroutineOutlivesRun(t *testing.T) {
	clk := clock.NewFake(time.Now())
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "jobd.db"), sqlite.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	var stops []func()
	for _, node := range []string{"leader", "follower"} {
		r, sig := newRunner(t, s, clk, node)
		mustAdd(t, r, maintenance.Duty{Name: "everywhere", Interval: time.Second, Pass: func(context.Context) error { return nil }})
		mustAdd(t, r, maintenance.Duty{Name: "leader", Interval: time.Second, Leader: true, Pass: func(context.Context) error { return nil }})
		stops = append(stops, run(t, r))
		if leads := testsignal.Of(&sig.Attempt).Wait(t, node+"'s first attempt"); leads != (node == "leader") {
			t.Fatalf("%s leads: %v", node, leads)
		}
		waitPass(t, sig, "everywhere")
	}
	if len(runnerGoroutines()) == 0 {
		t.Fatal("found no goroutine of the runners while they run: the leak check is blind")
	}
	for _, stop := range stops {
		stop()
	}
	if left := leftGoroutines(); len(left) > 0 {
		t.Fatalf("%d goroutines of the runners outlived Run:\n\n%s", len(left), strings.Join(left, "\n\n"))
	}
}

// runnerGoroutines returns the stacks of the goroutines running code of
// the runners.
func runnerGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var found []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		// Goroutines started by wg.Go say "created by sync": look for the
		// package's frames instead.
		if strings.Contains(g, "github.com/jobd/jobd/engine/internal/maintenance.") && !strings.Contains(g, "testing.tRunner") {
			found = append(found, g)
		}
	}
	return found
}

// leftGoroutines returns runnerGoroutines once those that are only
// returning have gone: a goroutine's end is not signalled, so the runtime
// is asked again until none is left, for a bounded time.
func leftGoroutines() []string {
	left := runnerGoroutines()
	for deadline := time.Now().Add(10 * time.Second); len(left) > 0 && time.Now().Before(deadline); left = runnerGoroutines() {
		runtime.Gosched()
	}
	return left
}

func recvOrFail[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(testsignal.Timeout):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}
