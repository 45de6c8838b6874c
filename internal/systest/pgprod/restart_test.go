package pgprod

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/internal/testutil/pgtest"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/postgres"
)

var quiet = slog.New(slog.DiscardHandler)

// watchedStore is a real store whose claims' failures and listener's
// reconnections the test sees.
type watchedStore struct {
	store.Store
	claimFailed chan error     // each failed claim, without blocking
	reconnected chan time.Time // each reconnection of the listener
}

func (w *watchedStore) JobClaim(ctx context.Context, p store.ClaimParams) ([]*job.Job, error) {
	jobs, err := w.Store.JobClaim(ctx, p)
	if err != nil {
		select {
		case w.claimFailed <- err:
		default:
		}
	}
	return jobs, err
}

func (w *watchedStore) Listen(ctx context.Context, notify func(store.Notification)) error {
	return w.Store.Listen(ctx, func(n store.Notification) {
		if n == (store.Notification{}) { // "listening again: claim"
			select {
			case w.reconnected <- time.Now():
			default:
			}
		}
		notify(n)
	})
}

// TestRestartPickup restarts PostgreSQL (pg_ctl restart -m immediate,
// in two steps) under an engine whose claim failed while the server was
// away, and submits a job the moment the server is back. The engine's
// clock is a fake nobody advances once the server is down: its poll and
// the backoff of its failed claim never end by themselves, so the job is
// picked up only because the listener reconnects at once (every 25 ms
// while the outage is young) and its reconnection (or the job's NOTIFY)
// ends the failed claim's backoff. On a jobd whose claim loop waits out
// its backoff, the job is never picked up.
func TestRestartPickup(t *testing.T) {
	if testing.Short() {
		t.Skip("the production PostgreSQL tier (real jobd serve nodes) runs without -short")
	}
	t.Parallel()
	cl := pgtest.NewCluster(t)
	ctx := t.Context()
	st, err := postgres.Open(ctx, cl.URL(), postgres.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	ws := &watchedStore{Store: st, claimFailed: make(chan error, 1), reconnected: make(chan time.Time, 1)}
	fake := clock.NewFake(time.Now())
	eng, err := engine.New(engine.Config{Store: ws, Clock: fake, Node: "restart", Logger: quiet,
		Queues: []engine.QueueConfig{{Queue: "q", Concurrency: 2}}, PollInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan uuid.UUID, 16)
	engine.Register(eng, "k", func(ctx context.Context, j *engine.Job[json.RawMessage]) (struct{}, error) {
		started <- j.ID
		return struct{}{}, nil
	})
	// The first job is there before the engine starts: its first claim
	// takes it.
	first := insertJob(t, st)
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- eng.Run(runCtx) }()
	defer func() {
		stop()
		<-ran
	}()
	waitStarted(t, started, first, "the first job")
	waitSucceeded(t, st, first)

	cl.Stop(t)
	// The poll comes (the fake clock moves a poll ahead, again until a
	// claim failed), and its claim fails: the server is down.
	deadline := time.Now().Add(time.Minute)
	for failed := false; !failed; {
		fake.Advance(time.Second)
		select {
		case err := <-ws.claimFailed:
			t.Logf("the claim failed as the server was down: %v", err)
			failed = true
		case <-time.After(50 * time.Millisecond): // the next advance: a poll bounded by the deadline
		}
		if time.Now().After(deadline) {
			t.Fatal("no claim failed within a minute of the server's stop")
		}
	}
	cl.Start(t)
	back := time.Now()
	second := insertJob(t, st)
	inserted := time.Now()
	var reconnectedAt time.Time
	select {
	case reconnectedAt = <-ws.reconnected:
	case <-time.After(time.Minute):
		t.Fatal("the listener did not reconnect within a minute of the server's start")
	}
	waitStarted(t, started, second, "the job submitted after the restart (the failed claim's backoff on a clock nobody moves must end when the listener is back)")
	pickedUp := time.Now()
	t.Logf("figures: listener back %s after the server accepted connections; job submitted %s after that, started %s after its submit",
		reconnectedAt.Sub(back).Round(time.Millisecond), inserted.Sub(back).Round(time.Millisecond), pickedUp.Sub(inserted).Round(time.Millisecond))
}

// insertJob inserts a job of kind k in queue q, retrying while the pool's
// connections from before a restart fail (for at most a minute).
func insertJob(t *testing.T, st store.Store) uuid.UUID {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		res, err := st.JobInsertMany(t.Context(), []job.InsertParams{{Queue: "q", Kind: "k"}})
		if err == nil {
			return res[0].Job.ID
		}
		if !errors.Is(err, store.ErrUnavailable) || time.Now().After(deadline) {
			t.Fatalf("insert: %v", err)
		}
	}
}

// waitStarted waits (at most a minute) for the handler to start job id.
func waitStarted(t *testing.T, started <-chan uuid.UUID, id uuid.UUID, what string) {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case got := <-started:
			if got == id {
				return
			}
		case <-timeout:
			t.Fatalf("%s was not started within a minute", what)
		}
	}
}

// waitSucceeded polls the job until it succeeded (at most a minute).
func waitSucceeded(t *testing.T, st store.Store, id uuid.UUID) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		j, err := st.JobGet(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j.State == job.StateSucceeded {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s is %s a minute on", id, j.State)
		}
		time.Sleep(10 * time.Millisecond) // a poll bounded by the deadline
	}
}
