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
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/engine/internal/maintenance"
	"github.com/jobd/jobd/internal/testutil/pgtest/migrated"
	"github.com/jobd/jobd/internal/testutil/storewatch"
	"github.com/jobd/jobd/internal/testutil/testsignal"
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
		a := newEngine(t, s, newLogs(t), engine.Config{Node: "a", Queues: queue(1), Clock: clock.NewFake(time.Now())})
		lost := engine.OutcomeLostSignal(a)
		lost.Init()
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
		lost.WaitFor(t, "node a to report its outcome as lost", func(id uuid.UUID) bool { return id == j.ID })
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
// TestWorkerKilled and TestLeaderKilled run in a subprocess and kill. It
// skips unless helperEnv is set.
func TestHelperWorkerProcess(t *testing.T) {
	spec := os.Getenv(helperEnv)
	if spec == "" {
		t.Skip("the helper node of TestWorkerKilled and TestLeaderKilled, run by them in a subprocess")
	}
	driver, dsn, _ := strings.Cut(spec, "=")
	// Each write is passed on to the parent, on the pipe startHelper gave
	// as file 3, so that it waits for this process's writes like for its
	// own.
	parent := os.NewFile(3, "parent")
	s := storewatch.WrapNotify(openAt(t, driver, dsn, false), func() { _, _ = parent.Write([]byte{1}) })
	// A long reaper interval: when this node leads, its term (three
	// intervals) outlives the test, as a dead leader's would.
	e := newEngine(t, s, newLogs(t), engine.Config{
		Node: "helper", Queues: queue(1), HeartbeatInterval: 500 * time.Millisecond, ReaperInterval: time.Hour,
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
				dsn = migrated.NewDatabase(t)
			} else {
				dsn = filepath.Join(t.TempDir(), "jobd.db")
			}
			s := openAt(t, driver, dsn, true)
			j := insert(t, s, job.InsertParams{Kind: "sleep", LeaseTTL: 2 * time.Second,
				Args: json.RawMessage(`{"ms":3000,"steps":3,"result":"slept"}`)})

			kill := startHelper(t, s, driver, dsn)
			waitJob(t, s, j.ID, "running in the worker process", func(j *job.Job) bool {
				return j.State == job.StateRunning && j.LeaseOwner == "helper"
			})
			kill()

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

// TestLeaderKilled: the maintenance leader dies (SIGKILL) holding a job;
// its term, in the database, runs on. Another node, which therefore
// cannot lead, still returns the job to the queue once its lease expires,
// and runs it.
func TestLeaderKilled(t *testing.T) {
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			var dsn string
			if driver == "postgres" {
				dsn = migrated.NewDatabase(t)
			} else {
				dsn = filepath.Join(t.TempDir(), "jobd.db")
			}
			s := openAt(t, driver, dsn, true)
			ctx := context.Background()
			// The helper leads from the start; its own renewals extend the
			// term to three hours.
			if ok, err := s.LeaderAttempt(ctx, maintenance.DefaultElection, "helper", time.Hour); err != nil || !ok {
				t.Fatalf("elect the helper: %v %v", ok, err)
			}
			j := insert(t, s, job.InsertParams{Kind: "sleep", LeaseTTL: 2 * time.Second,
				Args: json.RawMessage(`{"ms":60000,"steps":60}`)})
			stopHelper := startHelper(t, s, driver, dsn)
			waitJob(t, s, j.ID, "running in the helper process", func(j *job.Job) bool {
				return j.State == job.StateRunning && j.LeaseOwner == "helper"
			})

			survivor := newEngine(t, s, newLogs(t), engine.Config{Node: "survivor", ReaperInterval: 100 * time.Millisecond})
			sig := engine.MaintenanceSignals(survivor)
			testsignal.Of(&sig.Attempt).Init()
			start(t, survivor)
			if testsignal.Of(&sig.Attempt).Wait(t, "the survivor's first election attempt") {
				t.Fatal("the survivor leads beside the helper")
			}
			stopHelper()

			got := waitJob(t, s, j.ID, "back in the queue", func(j *job.Job) bool { return j.State != job.StateRunning })
			if got.State != job.StateQueued || got.Attempt != 1 {
				t.Fatalf("job %s attempt %d, want queued after attempt 1", got.State, got.Attempt)
			}
			want := []job.EventKind{job.EventQueued, job.EventClaimed, job.EventRescued}
			if kinds := eventKinds(t, s, j.ID); !slices.Equal(kinds, want) {
				t.Errorf("journal %v, want %v", kinds, want)
			}
			if survivor.Leading() {
				t.Error("the survivor leads: the dead helper's term should still run")
			}
			if ok, err := s.LeaderAttempt(ctx, maintenance.DefaultElection, "probe", time.Second); err != nil || ok {
				t.Errorf("a new node's election: leads %v, %v; want the dead helper's term to hold", ok, err)
			}
		})
	}
}

// startHelper runs TestHelperWorkerProcess in a subprocess on the store s
// opened at dsn, and returns a func that kills it (SIGKILL); it is killed
// at the end of t in any case. The helper's writes wake s's waits.
func startHelper(t *testing.T, s store.Store, driver, dsn string) (kill func()) {
	t.Helper()
	watched := storewatch.Of(s)
	wrote, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWorkerProcess$", "-test.v")
	cmd.Env = append(os.Environ(), helperEnv+"="+driver+"="+dsn)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.ExtraFiles = []*os.File{w}
	err = cmd.Start()
	w.Close()
	if err != nil {
		wrote.Close()
		t.Fatalf("start the helper: %v", err)
	}
	go func() {
		defer wrote.Close()
		buf := make([]byte, 512)
		for {
			n, err := wrote.Read(buf)
			if n > 0 {
				watched.Wrote()
			}
			if err != nil {
				return // the helper is gone
			}
		}
	}()
	var once sync.Once
	kill = func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	t.Cleanup(func() {
		kill()
		if t.Failed() {
			t.Logf("helper output:\n%s", out.String())
		}
	})
	return kill
}
