package engine_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/engine/builtin"
	"github.com/jobd/jobd/internal/testutil/pgtest/migrated"
	"github.com/jobd/jobd/internal/testutil/testsignal"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// heartbeatCounter is the real store, counting JobHeartbeat calls.
type heartbeatCounter struct {
	store.Store
	n atomic.Int64
}

func (c *heartbeatCounter) Unwrap() store.Store { return c.Store }

func (c *heartbeatCounter) JobHeartbeat(ctx context.Context, owner string, leases []store.Lease) ([]store.HeartbeatResult, error) {
	c.n.Add(1)
	return c.Store.JobHeartbeat(ctx, owner, leases)
}

// TestCancelReachesRunningJobAtOnce: with heartbeats and progress writes
// an hour apart, only the store's cancel notification can stop a running
// job; it must, whether the cancel comes through the engine's own store or
// through another store on the same database (another node).
func TestCancelReachesRunningJobAtOnce(t *testing.T) {
	for _, name := range drivers {
		for _, via := range []string{"SameNode", "OtherNode"} {
			t.Run(name+"/"+via, func(t *testing.T) {
				t.Parallel()
				dsn := filepath.Join(t.TempDir(), "jobd.db")
				if name == "postgres" {
					dsn = migrated.NewDatabase(t)
				}
				s := &heartbeatCounter{Store: openAt(t, name, dsn, true)}
				canceler := store.Store(s)
				if via == "OtherNode" {
					canceler = openAt(t, name, dsn, false)
				}
				e := newEngine(t, s, newLogs(t), engine.Config{
					Queues:            queue(1),
					HeartbeatInterval: time.Hour,
					ProgressInterval:  time.Hour,
				})
				start(t, e)
				waitListening(t, e, s)

				j := insert(t, s, job.InsertParams{
					Kind:     builtin.KindSleep,
					Args:     json.RawMessage(`{"ms":3600000,"steps":3600}`),
					LeaseTTL: 3 * time.Hour, // renewed every hour, not every third of a minute
				})
				// Its first progress write is done: the next is an hour away.
				waitJob(t, s, j.ID, "running, first progress written", func(j *job.Job) bool {
					return j.State == job.StateRunning && j.Progress.Phase == builtin.PhaseSleeping
				})
				if _, err := canceler.JobCancel(context.Background(), j.ID); err != nil {
					t.Fatalf("JobCancel: %v", err)
				}
				// The wait's bound would fail against an hourly heartbeat.
				got := waitJob(t, s, j.ID, "the job to end canceled", func(j *job.Job) bool { return j.State.Final() })
				if got.State != job.StateCanceled {
					t.Fatalf("job ended %s (error %q), want canceled", got.State, got.LastError)
				}
				want := []job.EventKind{job.EventQueued, job.EventClaimed, job.EventCancelRequested, job.EventCanceled}
				if kinds := eventKinds(t, s, j.ID); !slices.Equal(kinds, want) {
					t.Errorf("journal %v, want %v", kinds, want)
				}
				if n := s.n.Load(); n != 0 {
					t.Errorf("%d heartbeats: the cancel should have come by notification", n)
				}
			})
		}
	}
}

// waitListening returns once e's Listen delivers: it Wakes a probe queue
// until e passes the wake-up on. Nothing says when LISTEN is in effect
// (the store's Listen reports only reconnections), so the probe is sent
// again each time a short wait for it ends empty.
func waitListening(t *testing.T, e *engine.Engine, s store.Store) {
	t.Helper()
	const probe = "enginetest-probe"
	heard := make(chan struct{}, 1)
	unsubscribe := e.Subscribe(func(queue string) {
		if queue == probe {
			select {
			case heard <- struct{}{}:
			default:
			}
		}
	})
	defer unsubscribe()
	deadline := time.After(testsignal.Timeout)
	for {
		if err := s.Wake(context.Background(), probe); err != nil {
			t.Fatalf("Wake: %v", err)
		}
		select {
		case <-heard:
			return
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			t.Fatal("the engine never heard a wake-up: it does not listen")
		}
	}
}
