package engine_test

import (
	"context"
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestShutdownLetsHandlersFinish: a shutdown stops claiming at once but
// lets running handlers finish.
func TestShutdownLetsHandlersFinish(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		e := newEngine(t, s, newLogs(t), engine.Config{Queues: queue(2), ShutdownTimeout: time.Hour})
		started := make(chan struct{})
		release := make(chan struct{})
		engine.Register(e, "finish", func(ctx context.Context, j *engine.Job[struct{}]) (string, error) {
			close(started)
			<-release
			return "finished", nil
		})
		r := start(t, e)
		j := insert(t, s, job.InsertParams{Kind: "finish"})
		<-started

		r.cancel()
		late := insert(t, s, job.InsertParams{Kind: "noop"})
		close(release)
		if err := r.stop(t); err != nil {
			t.Fatalf("Run: %v", err)
		}
		got, err := s.JobGet(context.Background(), j.ID)
		if err != nil || got.State != job.StateSucceeded || !jsonEqual(got.Result, `"finished"`) {
			t.Fatalf("job %+v, %v; want it succeeded by the time Run returned", got, err)
		}
		// Inserted after the shutdown began: never run (if a claim raced
		// with the shutdown, the job went straight back).
		got, err = s.JobGet(context.Background(), late.ID)
		if err != nil || got.State != job.StateQueued || got.Attempt != 0 {
			t.Errorf("late job %+v, %v; want queued, attempt 0", got, err)
		}
	})
}

// TestShutdownReleasesUnfinishedJobs: handlers that outlive the shutdown
// timeout are cancelled with ErrShutdown and their jobs go back to the
// queue, the attempt not counted; another node then runs them.
func TestShutdownReleasesUnfinishedJobs(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		a := newEngine(t, s, newLogs(t), engine.Config{Node: "a", Queues: queue(2), ShutdownTimeout: time.Millisecond})
		causes := make(chan error, 2)
		started := make(chan struct{}, 2)
		engine.Register(a, "work", func(ctx context.Context, j *engine.Job[struct{}]) (string, error) {
			started <- struct{}{}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return "", ctx.Err()
		})
		r := start(t, a)
		j1 := insert(t, s, job.InsertParams{Kind: "work"})
		j2 := insert(t, s, job.InsertParams{Kind: "work"})
		// Wait for the handlers, not for the state: a job can be running
		// in the database before its claim returned to the engine (and a
		// claim that returns during the shutdown is released at once).
		<-started
		<-started
		if err := r.stop(t); err != nil {
			t.Fatalf("Run: %v", err)
		}
		for range 2 {
			select {
			case cause := <-causes:
				if cause != engine.ErrShutdown {
					t.Errorf("handler's context cause %v, want ErrShutdown", cause)
				}
			default:
				t.Fatal("Run returned before both handlers were cancelled")
			}
		}
		for _, id := range []*job.Job{j1, j2} {
			got, err := s.JobGet(context.Background(), id.ID)
			if err != nil || got.State != job.StateQueued || got.Attempt != 0 {
				t.Fatalf("job %+v, %v; want queued with attempt 0 once Run returned", got, err)
			}
		}

		b := newEngine(t, s, newLogs(t), engine.Config{Node: "b", Queues: queue(2)})
		engine.Register(b, "work", func(ctx context.Context, j *engine.Job[struct{}]) (string, error) {
			return "b", nil
		})
		start(t, b)
		for _, j := range []*job.Job{j1, j2} {
			got := waitState(t, s, j.ID, job.StateSucceeded)
			if got.Attempt != 1 || !jsonEqual(got.Result, `"b"`) {
				t.Errorf("attempt %d, result %s; want 1, b", got.Attempt, got.Result)
			}
			want := []job.EventKind{job.EventQueued, job.EventClaimed, job.EventRequeued, job.EventClaimed, job.EventSucceeded}
			if kinds := eventKinds(t, s, j.ID); !slices.Equal(kinds, want) {
				t.Errorf("journal %v, want %v", kinds, want)
			}
		}
	})
}

// TestShutdownGivesUpOnStuckHandlers: a handler that ignores its
// cancelled context does not hold the shutdown up for long; its job is
// released without it and its late outcome is dropped.
func TestShutdownGivesUpOnStuckHandlers(t *testing.T) {
	t.Parallel()
	s := openStore(t, "sqlite")
	e := newEngine(t, s, newLogs(t), engine.Config{Queues: queue(1), ShutdownTimeout: time.Millisecond, StopGrace: 50 * time.Millisecond})
	dropped := engine.OutcomeDroppedSignal(e)
	dropped.Init()
	unblock := make(chan struct{})
	started := make(chan struct{})
	engine.Register(e, "stuck", func(ctx context.Context, j *engine.Job[struct{}]) (string, error) {
		close(started)
		<-unblock
		return "too late", nil
	})
	r := start(t, e)
	j := insert(t, s, job.InsertParams{Kind: "stuck"})
	<-started
	if err := r.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	got, err := s.JobGet(context.Background(), j.ID)
	if err != nil || got.State != job.StateQueued || got.Attempt != 0 {
		t.Fatalf("job %+v, %v; want released: queued, attempt 0", got, err)
	}
	close(unblock)
	dropped.WaitFor(t, "the late outcome to be dropped", func(id uuid.UUID) bool { return id == j.ID })
	if got, _ := s.JobGet(context.Background(), j.ID); got.State != job.StateQueued {
		t.Errorf("state %s after the late outcome, want queued", got.State)
	}
}

// TestNoGoroutineOutlivesRun runs alone (not in parallel), so that the
// only engine goroutines are its own.
func TestNoGoroutineOutlivesRun(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			e := newEngine(t, s, newLogs(t), engine.Config{
				Queues: queue(4), ShutdownTimeout: time.Millisecond,
				HeartbeatInterval: 50 * time.Millisecond, ProgressInterval: time.Millisecond,
			})
			r := start(t, e)
			done := insert(t, s, job.InsertParams{Kind: "sleep", Args: json.RawMessage(`{"ms":20,"steps":5}`)})
			failed := insert(t, s, job.InsertParams{Kind: "sleep", MaxAttempts: 1, Args: json.RawMessage(`{"fail_attempts":1}`)})
			long := insert(t, s, job.InsertParams{Kind: "sleep", Args: json.RawMessage(`{"ms":600000,"steps":1000}`)})
			waitState(t, s, done.ID, job.StateSucceeded)
			waitState(t, s, failed.ID, job.StateFailed)
			waitState(t, s, long.ID, job.StateRunning)
			if len(engineGoroutines()) == 0 {
				t.Fatal("found no engine goroutine while the engine runs: the leak check is blind")
			}
			if err := r.stop(t); err != nil {
				t.Fatalf("Run: %v", err)
			}
			// Goroutines that just signalled their end may still be
			// returning, and nothing signals a goroutine's end: ask the
			// runtime again until none is left, within a bound.
			left := engineGoroutines()
			for deadline := time.Now().Add(10 * time.Second); len(left) > 0 && time.Now().Before(deadline); left = engineGoroutines() {
				runtime.Gosched()
			}
			if len(left) > 0 {
				t.Fatalf("%d goroutines of the engine outlived Run:\n\n%s", len(left), strings.Join(left, "\n\n"))
			}
		})
	}
}

// engineGoroutines returns the stacks of the goroutines running the
// engine's code or its maintenance's, but for the tests' own (those of
// package engine's tests included). Goroutines started by wg.Go say
// "created by sync", so the packages' frames are looked for instead of
// the creator.
func engineGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var found []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "testing.tRunner") {
			continue
		}
		if strings.Contains(g, "github.com/jobd/jobd/engine.") || strings.Contains(g, "github.com/jobd/jobd/engine/internal/maintenance.") {
			found = append(found, g)
		}
	}
	return found
}
