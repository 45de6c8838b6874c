// Package remote holds the rules of remote workers that are not HTTP: the
// protocol's Service (what a claim, a heartbeat, progress, a checkpoint
// and an outcome may be and do, under the engine's policy: backoff,
// default timeouts, claim pacing, wake-ups) and when a worker that
// stopped calling counts as offline (the maintenance duty that sweeps the
// registry). The HTTP API (package httpapi) decodes the workers' requests,
// calls the Service and encodes its answers.
package remote

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/engine"
)

// Defaults of SweepConfig.
const (
	DefaultOfflineAfter  = 5 * time.Minute
	DefaultSweepInterval = 10 * time.Second
)

// DutyOfflineSweep names the offline sweep among the maintenance duties.
const DutyOfflineSweep = "remote worker offline sweep"

// sweepCallTimeout bounds the sweep's store call.
const sweepCallTimeout = 30 * time.Second

// Registry is the part of the store the sweep uses; store.Store is one.
type Registry interface {
	// WorkerMarkOffline marks offline every worker not offline yet whose
	// last heartbeat (or creation) is at or before cutoff, and returns how
	// many it marked.
	WorkerMarkOffline(ctx context.Context, cutoff time.Time) (int, error)
}

// SweepConfig configures the offline sweep. Zero fields take the
// documented defaults.
type SweepConfig struct {
	// Registry holds the workers. Required.
	Registry Registry
	// OfflineAfter is how long a worker may go without a heartbeat or a
	// claim before it is marked offline. Default 5m.
	OfflineAfter time.Duration
	// Interval is the gap between two sweeps. Default 10s.
	Interval time.Duration
	// Clock defaults to clock.Real.
	Clock clock.Clock
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// OfflineSweep returns the leader duty that marks offline the workers
// silent for OfflineAfter. It marks none within OfflineAfter of its own
// creation (the server's start): a restarted server gives every worker
// that long to reach it first. A worker's jobs go back to the queue only
// when their leases expire (the engine's rescue), never by the sweep; a
// heartbeat that races with the sweep wins (store.Store.WorkerMarkOffline).
func OfflineSweep(cfg SweepConfig) (engine.Duty, error) {
	switch {
	case cfg.Registry == nil:
		return engine.Duty{}, errors.New("remote: SweepConfig.Registry is required")
	case cfg.OfflineAfter < 0:
		return engine.Duty{}, fmt.Errorf("remote: the offline period must not be negative, got %s", cfg.OfflineAfter)
	case cfg.Interval < 0:
		return engine.Duty{}, fmt.Errorf("remote: the sweep interval must not be negative, got %s", cfg.Interval)
	}
	if cfg.OfflineAfter == 0 {
		cfg.OfflineAfter = DefaultOfflineAfter
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultSweepInterval
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &sweep{cfg: cfg, started: cfg.Clock.Now()}
	return engine.Duty{Name: DutyOfflineSweep, Interval: cfg.Interval, Leader: true, Pass: s.pass}, nil
}

type sweep struct {
	cfg     SweepConfig
	started time.Time
}

func (s *sweep) pass(ctx context.Context) error {
	now := s.cfg.Clock.Now()
	if now.Sub(s.started) < s.cfg.OfflineAfter {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, sweepCallTimeout)
	defer cancel()
	n, err := s.cfg.Registry.WorkerMarkOffline(cctx, now.Add(-s.cfg.OfflineAfter))
	if n > 0 {
		s.cfg.Logger.Info("remote: marked workers offline", "workers", n, "silent_for", s.cfg.OfflineAfter)
	}
	if err != nil {
		return fmt.Errorf("mark silent workers offline: %w", err)
	}
	return nil
}
