package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/engine/internal/maintenance"
	"github.com/jobd/jobd/internal/remote"
	"github.com/jobd/jobd/internal/testutil/pgtest/migrated"
	"github.com/jobd/jobd/internal/testutil/testsignal"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/postgres"
	"github.com/jobd/jobd/store/sqlite"
)

// eachStoreOnClock runs fn, in parallel, against a fresh migrated store of
// each driver that tells the time by a fake clock, which the test moves.
func eachStoreOnClock(t *testing.T, fn func(t *testing.T, s store.Store, clk *clock.Fake)) {
	t.Parallel()
	for _, name := range drivers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clk := clock.NewFake(time.Date(2031, time.March, 4, 5, 6, 7, 0, time.UTC))
			fn(t, openOnClock(t, name, clk), clk)
		})
	}
}

// openOnClock opens a fresh migrated store of driver name on clock c.
func openOnClock(t *testing.T, name string, c clock.Clock) store.Store {
	t.Helper()
	ctx := context.Background()
	var (
		s   store.Store
		err error
	)
	switch name {
	case "sqlite":
		s, err = sqlite.Open(ctx, filepath.Join(t.TempDir(), "jobd.db"), sqlite.Options{Clock: c})
	case "postgres":
		s, err = postgres.Open(ctx, migrated.NewDatabase(t), postgres.Options{Clock: c, Logger: discard})
	}
	if err != nil {
		t.Fatalf("open %s store: %v", name, err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate %s store: %v", name, err)
	}
	return s
}

// hookedStore runs a test's hook before the duties' store calls; a hook's
// error is returned instead of calling the store. A hook may block (it
// must return when its context ends).
type hookedStore struct {
	store.Store
	beforeRescue func(ctx context.Context) error
	beforePrune  func(ctx context.Context) error
}

func (s *hookedStore) Unwrap() store.Store { return s.Store }

func (s *hookedStore) JobRescue(ctx context.Context, limit int) (int, error) {
	if s.beforeRescue != nil {
		if err := s.beforeRescue(ctx); err != nil {
			return 0, err
		}
	}
	return s.Store.JobRescue(ctx, limit)
}

func (s *hookedStore) JobPrune(ctx context.Context, before time.Time, limit int) (int, error) {
	if s.beforePrune != nil {
		if err := s.beforePrune(ctx); err != nil {
			return 0, err
		}
	}
	return s.Store.JobPrune(ctx, before, limit)
}

var errBroken = errors.New("this duty's store calls are broken")

func broken(context.Context) error { return errBroken }

// waitPass waits for the next pass of duty and returns its error.
func waitPass(t *testing.T, sig *maintenance.Points, duty string) error {
	t.Helper()
	return testsignal.Of(&sig.Pass).WaitFor(t, "a pass of "+duty, func(p maintenance.PassDone) bool { return p.Duty == duty }).Err
}

// TestLongPassKeepsOneLeader: the leader's rescue and prune passes take
// longer than many terms; the leader renews its term meanwhile, on its
// own schedule, so a second node never leads (nor prunes) at the same
// time.
func TestLongPassKeepsOneLeader(t *testing.T) {
	eachStoreOnClock(t, func(t *testing.T, s store.Store, clk *clock.Fake) {
		const reaper = 10 * time.Second // a term of 30s, renewed every 10s
		held := make(chan string, 2)
		release := make(chan struct{})
		hold := func(what string) func(context.Context) error {
			return func(ctx context.Context) error {
				held <- what
				select {
				case <-release:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
		a := newEngine(t, &hookedStore{Store: s, beforeRescue: hold("rescue"), beforePrune: hold("prune")},
			newLogs(t), engine.Config{Node: "a", Clock: clk, ReaperInterval: reaper})
		aSig := engine.MaintenanceSignals(a)
		testsignal.Of(&aSig.Attempt).Init()
		start(t, a)
		if !testsignal.Of(&aSig.Attempt).Wait(t, "a's first election attempt") {
			t.Fatal("a, alone, does not lead")
		}
		for range 2 {
			recvOrFail(t, held, "a's rescue and prune passes to start")
		}

		var bPrunes atomic.Int32
		b := newEngine(t, &hookedStore{Store: s, beforePrune: func(context.Context) error { bPrunes.Add(1); return nil }},
			newLogs(t), engine.Config{Node: "b", Clock: clk, ReaperInterval: reaper})
		bSig := engine.MaintenanceSignals(b)
		testsignal.Of(&bSig.Attempt).Init()
		start(t, b)
		if testsignal.Of(&bSig.Attempt).Wait(t, "b's first election attempt") {
			t.Fatal("b leads beside a")
		}
		// Nine renewal periods (three terms) while a's passes hang.
		for i := 1; i <= 9; i++ {
			clk.Advance(reaper)
			if !testsignal.Of(&aSig.Attempt).Wait(t, "a's renewal") {
				t.Fatalf("at +%s a lost its term while its passes ran", time.Duration(i)*reaper)
			}
			if testsignal.Of(&bSig.Attempt).Wait(t, "b's election attempt") {
				t.Fatalf("at +%s b leads while a's passes run", time.Duration(i)*reaper)
			}
			if !a.Leading() || b.Leading() {
				t.Fatalf("at +%s a leads %v, b leads %v; want a only", time.Duration(i)*reaper, a.Leading(), b.Leading())
			}
		}
		if n := bPrunes.Load(); n != 0 {
			t.Errorf("b pruned %d times while a led", n)
		}
		close(release)
	})
}

// TestFailingDutyDoesNotStopOthers: every rescue fails, yet the prune and
// the remote-worker sweep run on time; then every prune fails, yet the
// rescue runs on time.
func TestFailingDutyDoesNotStopOthers(t *testing.T) {
	eachStoreOnClock(t, func(t *testing.T, s store.Store, clk *clock.Fake) {
		ctx := context.Background()
		// A job finished now, pruned after a minute; a worker silent since
		// now, offline after a minute.
		done := insert(t, s, job.InsertParams{Kind: "k"})
		claimed := claimAs(t, s, "someone")
		if res, err := s.JobFinish(ctx, []store.Outcome{{Lease: store.Lease{ID: claimed.ID, Token: claimed.LeaseToken}, Outcome: job.Outcome{Status: store.OutcomeSucceeded, Result: json.RawMessage(`1`)}}}); err != nil || res[0].Lost {
			t.Fatalf("finish: %v %+v", err, res)
		}
		if err := s.WorkerCreate(ctx, store.Worker{ID: "w1", Name: "w1"}, store.APIKey{ID: "k1", Name: "w1", Prefix: "p1", Hash: []byte("h"), WorkerID: "w1"}); err != nil {
			t.Fatalf("WorkerCreate: %v", err)
		}

		e := newEngine(t, &hookedStore{Store: s, beforeRescue: broken}, newLogs(t),
			engine.Config{Node: "a", Clock: clk, ReaperInterval: time.Minute, Retention: time.Minute})
		sweep, err := remote.OfflineSweep(remote.SweepConfig{Registry: s, OfflineAfter: time.Minute, Interval: time.Minute, Clock: clk, Logger: discard})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.AddDuty(sweep); err != nil {
			t.Fatal(err)
		}
		sig := engine.MaintenanceSignals(e)
		testsignal.Of(&sig.Pass).Init()
		start(t, e)
		if err := waitPass(t, sig, engine.DutyRescue); !errors.Is(err, errBroken) {
			t.Fatalf("rescue pass: %v, want it broken", err)
		}
		waitPass(t, sig, engine.DutyPrune)
		waitPass(t, sig, remote.DutyOfflineSweep)

		clk.Advance(2 * time.Minute)
		if err := waitPass(t, sig, engine.DutyPrune); err != nil {
			t.Fatalf("prune: %v", err)
		}
		if _, err := s.JobGet(ctx, done.ID); !errors.Is(err, job.ErrNotFound) {
			t.Errorf("finished job after the prune: %v, want it gone", err)
		}
		if err := waitPass(t, sig, remote.DutyOfflineSweep); err != nil {
			t.Fatalf("offline sweep: %v", err)
		}
		if w, err := s.WorkerGet(ctx, "w1"); err != nil || w.Status != store.WorkerOffline {
			t.Errorf("silent worker after the sweep: %+v, %v; want offline", w, err)
		}

		// The other way round, on a second node: prune broken, rescue fine.
		running := insert(t, s, job.InsertParams{Kind: "k", LeaseTTL: time.Minute})
		claimAs(t, s, "gone")
		f := newEngine(t, &hookedStore{Store: s, beforePrune: broken}, newLogs(t),
			engine.Config{Node: "b", Clock: clk, ReaperInterval: time.Minute})
		fsig := engine.MaintenanceSignals(f)
		testsignal.Of(&fsig.Pass).Init()
		start(t, f)
		waitPass(t, fsig, engine.DutyRescue)
		clk.Advance(2 * time.Minute)
		if err := waitPass(t, fsig, engine.DutyRescue); err != nil {
			t.Fatalf("rescue: %v", err)
		}
		if j := getJob(t, s, running.ID); j.State != job.StateQueued {
			t.Errorf("expired job after the rescue: %s, want queued", j.State)
		}
	})
}

// TestRescueByNonLeader: the leader is dead (its term, in the database,
// runs for another hour) and held a job whose lease expired. Another node,
// which cannot lead, returns the job to the queue within the lease plus
// one reaper interval.
func TestRescueByNonLeader(t *testing.T) {
	eachStoreOnClock(t, func(t *testing.T, s store.Store, clk *clock.Fake) {
		ctx := context.Background()
		const lease, reaper = 5 * time.Second, 2 * time.Second
		if ok, err := s.LeaderAttempt(ctx, maintenance.DefaultElection, "dead", time.Hour); err != nil || !ok {
			t.Fatalf("the dead node's election: %v %v", ok, err)
		}
		j := insert(t, s, job.InsertParams{Kind: "k", LeaseTTL: lease})
		claimAs(t, s, "dead")

		e := newEngine(t, s, newLogs(t), engine.Config{Node: "survivor", Clock: clk, ReaperInterval: reaper})
		sig := engine.MaintenanceSignals(e)
		testsignal.Of(&sig.Pass).Init()
		start(t, e)
		waitPass(t, sig, engine.DutyRescue) // at once, at start

		clk.Advance(lease + reaper)
		if err := waitPass(t, sig, engine.DutyRescue); err != nil {
			t.Fatalf("rescue: %v", err)
		}
		got := getJob(t, s, j.ID)
		if got.State != job.StateQueued {
			t.Fatalf("job %s lease+reaper after its claim, want queued", got.State)
		}
		want := []job.EventKind{job.EventQueued, job.EventClaimed, job.EventRescued}
		if kinds := eventKinds(t, s, j.ID); !slices.Equal(kinds, want) {
			t.Errorf("journal %v, want %v", kinds, want)
		}
		if e.Leading() {
			t.Error("the survivor leads; the dead node's term still runs")
		}
	})
}

// claimAs claims the one available job of the default queue as owner.
func claimAs(t *testing.T, s store.Store, owner string) *job.Job {
	t.Helper()
	jobs, err := s.JobClaim(context.Background(), store.ClaimParams{Queue: job.DefaultQueue, Max: 1, Owner: owner})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim as %s: %v, %d jobs", owner, err, len(jobs))
	}
	return jobs[0]
}

func getJob(t *testing.T, s store.Store, id uuid.UUID) *job.Job {
	t.Helper()
	j, err := s.JobGet(context.Background(), id)
	if err != nil {
		t.Fatalf("JobGet: %v", err)
	}
	return j
}

// recvOrFail receives from c, failing t when nothing comes within the
// test signals' timeout.
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
