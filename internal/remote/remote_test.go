package remote_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/internal/remote"
	"github.com/jobd/jobd/store"
	"github.com/jobd/jobd/store/sqlite"
)

var quiet = slog.New(slog.DiscardHandler)

// TestOfflineSweep: a worker silent for long before the server started is
// not marked offline within OfflineAfter of the start (it gets that long
// to reach the server), and is marked once that has passed. The store's
// rule is the conformance suite's, on every driver; the sweep runs on
// both in the engine's maintenance tests.
func TestOfflineSweep(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2031, time.March, 4, 5, 6, 7, 0, time.UTC))
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "jobd.db"), sqlite.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.WorkerCreate(ctx, store.Worker{ID: "w", Name: "w"}, store.APIKey{ID: "k", Name: "w", Prefix: "p", Hash: []byte("h"), WorkerID: "w"}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour) // silent for an hour; then the server starts

	sweep, err := remote.OfflineSweep(remote.SweepConfig{Registry: s, OfflineAfter: time.Minute, Clock: clk, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if !sweep.Leader || sweep.Interval != remote.DefaultSweepInterval {
		t.Errorf("duty %+v: want a leader duty every %s", sweep, remote.DefaultSweepInterval)
	}
	status := func() store.WorkerStatus {
		w, err := s.WorkerGet(ctx, "w")
		if err != nil {
			t.Fatal(err)
		}
		return w.Status
	}
	clk.Advance(time.Minute - time.Second)
	if err := sweep.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if st := status(); st == store.WorkerOffline {
		t.Fatal("marked offline within OfflineAfter of the start")
	}
	clk.Advance(time.Second)
	if err := sweep.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if st := status(); st != store.WorkerOffline {
		t.Fatalf("status %s OfflineAfter after the start, want offline", st)
	}
}

func TestOfflineSweepRejects(t *testing.T) {
	for _, cfg := range []remote.SweepConfig{
		{},
		{Registry: nilRegistry{}, OfflineAfter: -time.Second},
		{Registry: nilRegistry{}, Interval: -time.Second},
	} {
		if _, err := remote.OfflineSweep(cfg); err == nil {
			t.Errorf("OfflineSweep(%+v) accepted", cfg)
		}
	}
}

type nilRegistry struct{}

func (nilRegistry) WorkerMarkOffline(context.Context, time.Time) (int, error) { return 0, nil }
