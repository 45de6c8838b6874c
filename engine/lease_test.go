package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/internal/pgtest"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestLeaseLost: a node whose heartbeats come too late for a job's lease
// loses the job to another node; its late outcome changes nothing.
func TestLeaseLost(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		holdStarted := make(chan struct{})
		release := make(chan struct{})
		// Node a stalls: its clock never moves, so its heartbeats never come
		// and the job's 1s lease expires under it.
		logsA := newLogs(t)
		a := newEngine(t, s, logsA, engine.Config{Node: "a", Queues: queue(1), Clock: clock.NewFake(time.Now())})
		engine.Register(a, "hold", func(ctx context.Context, j *engine.Job[struct{}]) (string, error) {
			close(holdStarted)
			<-release
			return "a", nil
		})
		b := newEngine(t, s, newLogs(t), engine.Config{Node: "b", Queues: queue(1)})
		engine.Register(b, "hold", func(ctx context.Context, j *engine.Job[struct{}]) (string, error) {
			return "b", nil
		})

		runA := start(t, a)
		// a's poll never fires on its frozen clock: the insert must reach
		// it as a wake-up, so wait until it listens.
		waitListening(t, a, s)
		j := insert(t, s, job.InsertParams{Kind: "hold", LeaseTTL: time.Second})
		<-holdStarted
		start(t, b) // only now, so that a has the first attempt

		got := waitState(t, s, j.ID, job.StateSucceeded)
		if got.Attempt != 2 || !jsonEqual(got.Result, `"b"`) || got.LeaseOwner == "a" {
			t.Errorf("attempt %d, result %s, owner %q; want attempt 2 done by b", got.Attempt, got.Result, got.LeaseOwner)
		}
		close(release)
		waitFor(t, 30*time.Second, "node a to log its outcome as lost", func() bool {
			return logsA.has("lease lost before the outcome was written", j.ID.String())
		})
		if err := runA.stop(t); err != nil {
			t.Errorf("Run a: %v", err)
		}
		got = waitState(t, s, j.ID, job.StateSucceeded)
		if !jsonEqual(got.Result, `"b"`) {
			t.Errorf("result %s after a's late outcome, want b's", got.Result)
		}
		want := []job.EventKind{job.EventQueued, job.EventClaimed, job.EventRescued, job.EventClaimed, job.EventSucceeded}
		if kinds := eventKinds(t, s, j.ID); !slices.Equal(kinds, want) {
			t.Errorf("journal %v, want %v", kinds, want)
		}
	})
}

// TestShortLeaseRenewedInTime: a job whose lease is shorter than the
// heartbeat interval is renewed on its own, faster schedule, so a healthy
// node never loses it.
func TestShortLeaseRenewedInTime(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		e := newEngine(t, s, newLogs(t), engine.Config{Queues: queue(1), HeartbeatInterval: time.Hour, ReaperInterval: 100 * time.Millisecond})
		start(t, e)
		// A second node whose reaper would rescue the job if its lease lapsed.
		reaper := newEngine(t, s, newLogs(t), engine.Config{Node: "reaper", ReaperInterval: 100 * time.Millisecond})
		start(t, reaper)
		j := insert(t, s, job.InsertParams{Kind: "sleep", LeaseTTL: time.Second,
			Args: json.RawMessage(`{"ms":2500,"steps":5}`)})
		got := waitState(t, s, j.ID, job.StateSucceeded)
		if got.Attempt != 1 {
			t.Errorf("attempt %d, want 1: the lease lapsed while the job ran", got.Attempt)
		}
	})
}

// helperEnv carries "driver=dsn" to the worker subprocess of
// TestWorkerKilled.
const helperEnv = "JOBD_ENGINE_TEST_HELPER_STORE"

// TestHelperWorkerProcess is not a test: it is the worker node that
// TestWorkerKilled runs in a subprocess and kills. It returns at once
// unless helperEnv is set.
func TestHelperWorkerProcess(t *testing.T) {
	spec := os.Getenv(helperEnv)
	if spec == "" {
		return
	}
	driver, dsn, _ := strings.Cut(spec, "=")
	s := openAt(t, driver, dsn, false)
	e := newEngine(t, s, newLogs(t), engine.Config{
		Node: "helper", Queues: queue(1), HeartbeatInterval: 500 * time.Millisecond,
	})
	// The parent kills this process; the timeout only guards against an
	// orphan.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.Run(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestWorkerKilled: a worker process dies (SIGKILL) in the middle of a
// job; once its lease expires, another node takes the job over and
// finishes it.
func TestWorkerKilled(t *testing.T) {
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			var dsn string
			if driver == "postgres" {
				dsn = pgtest.NewDatabase(t)
			} else {
				dsn = filepath.Join(t.TempDir(), "jobd.db")
			}
			s := openAt(t, driver, dsn, true)
			j := insert(t, s, job.InsertParams{Kind: "sleep", LeaseTTL: 2 * time.Second,
				Args: json.RawMessage(`{"ms":3000,"steps":3,"result":"slept"}`)})

			var out bytes.Buffer
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWorkerProcess$", "-test.v")
			cmd.Env = append(os.Environ(), helperEnv+"="+driver+"="+dsn)
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatalf("start worker: %v", err)
			}
			defer func() {
				if t.Failed() {
					t.Logf("worker output:\n%s", out.String())
				}
			}()
			exited := false
			t.Cleanup(func() {
				if !exited {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
				}
			})
			waitJob(t, s, j.ID, "running in the worker process", func(j *job.Job) bool {
				return j.State == job.StateRunning && j.LeaseOwner == "helper"
			})
			if err := cmd.Process.Kill(); err != nil {
				t.Fatalf("kill worker: %v", err)
			}
			_ = cmd.Wait()
			exited = true

			start(t, newEngine(t, s, newLogs(t), engine.Config{Node: "survivor", Queues: queue(1)}))
			got := waitState(t, s, j.ID, job.StateSucceeded)
			if got.Attempt != 2 || !jsonEqual(got.Result, `"slept"`) {
				t.Errorf("attempt %d, result %s; want 2, \"slept\"", got.Attempt, got.Result)
			}
			want := []job.EventKind{job.EventQueued, job.EventClaimed, job.EventRescued, job.EventClaimed, job.EventSucceeded}
			if kinds := eventKinds(t, s, j.ID); !slices.Equal(kinds, want) {
				t.Errorf("journal %v, want %v", kinds, want)
			}
		})
	}
}
