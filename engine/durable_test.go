package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/internal/testutil/testsignal"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestStepsResumeAtFailedStep: a five-step job whose fourth step fails
// on its first attempt resumes at the fourth step on its retry: the
// first three ran once each.
func TestStepsResumeAtFailedStep(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		e := newEngine(t, s, newLogs(t), engine.Config{Queues: queue(2)})
		var runs [5]atomic.Int32
		engine.Register(e, "five", func(ctx context.Context, j *engine.Job[struct{}]) (int, error) {
			sum := 0
			for i := range 5 {
				v, err := engine.Step(ctx, fmt.Sprintf("s%d", i+1), func(ctx context.Context) (int, error) {
					if runs[i].Add(1) == 1 && i == 3 {
						return 0, errors.New("step four fails once")
					}
					return i + 1, nil
				})
				if err != nil {
					return 0, err
				}
				sum += v
			}
			return sum, nil
		})
		start(t, e)
		j := insert(t, s, job.InsertParams{Kind: "five", MaxAttempts: 3})
		done := waitState(t, s, j.ID, job.StateSucceeded)
		if string(done.Result) != "15" || done.Attempt != 2 {
			t.Fatalf("result %s attempt %d, want 15 on attempt 2", done.Result, done.Attempt)
		}
		for i := range runs {
			want := int32(1)
			if i == 3 {
				want = 2
			}
			if got := runs[i].Load(); got != want {
				t.Errorf("step %d ran %d times, want %d", i+1, got, want)
			}
		}
		steps, err := s.JobSteps(context.Background(), j.ID)
		if err != nil || len(steps) != 5 || steps[3].Attempt != 2 || steps[2].Attempt != 1 {
			t.Fatalf("steps %+v, %v", steps, err)
		}
	})
}

// TestSpawnChildrenAndSum: a parent spawns 100 children, waits for them
// without a slot (a pool of 2 runs them), and sums their results when
// resumed; it spawns nothing twice.
func TestSpawnChildrenAndSum(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		e := newEngine(t, s, newLogs(t), engine.Config{Queues: queue(2)})
		var parentRuns atomic.Int32
		engine.Register(e, "square", func(ctx context.Context, j *engine.Job[num]) (int, error) {
			return j.Args.N * j.Args.N, nil
		})
		engine.Register(e, "sum", func(ctx context.Context, j *engine.Job[struct{}]) (int, error) {
			parentRuns.Add(1)
			if j.Resume == nil || len(j.Resume.Children) == 0 {
				children := make([]job.ChildParams, 100)
				for i := range children {
					children[i] = job.ChildParams{Key: fmt.Sprint(i), InsertParams: job.InsertParams{Kind: "square", Args: engine.Args(num{i + 1})}}
				}
				if _, err := engine.Spawn(ctx, children...); err != nil {
					return 0, err
				}
				return 0, engine.WaitForChildren(ctx)
			}
			sum := 0
			for key := range j.Resume.Children {
				var v int
				if err := j.Resume.DecodeChild(key, &v); err != nil {
					return 0, err
				}
				sum += v
			}
			return sum, nil
		})
		start(t, e)
		j := insert(t, s, job.InsertParams{Kind: "sum"})
		done := waitState(t, s, j.ID, job.StateSucceeded)
		if string(done.Result) != "338350" || done.Attempt != 1 || parentRuns.Load() != 2 {
			t.Fatalf("result %s attempt %d runs %d, want 338350, attempt 1, 2 runs", done.Result, done.Attempt, parentRuns.Load())
		}
		kinds := eventKinds(t, s, j.ID)
		if !containsKind(kinds, job.EventWaiting) || !containsKind(kinds, job.EventWoken) {
			t.Fatalf("journal %v: want waiting and woken", kinds)
		}
	})
}

// num is the args of the children and parents of these tests.
type num struct {
	N int `json:"n"`
}

func containsKind(kinds []job.EventKind, k job.EventKind) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}

// TestSignalWakesWaitingJob: a job waiting for a signal is woken by it
// and resumes with its payload.
func TestSignalWakesWaitingJob(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		e := newEngine(t, s, newLogs(t), engine.Config{Queues: queue(1)})
		engine.Register(e, "approve", func(ctx context.Context, j *engine.Job[struct{}]) (json.RawMessage, error) {
			if j.Resume == nil || j.Resume.Signal == nil {
				return nil, engine.WaitForSignal(ctx, "approved", 0)
			}
			return j.Resume.Signal.Payload, nil
		})
		start(t, e)
		j := insert(t, s, job.InsertParams{Kind: "approve"})
		waitJob(t, s, j.ID, "waiting for its signal", func(j *job.Job) bool { return j.State == job.StateWaiting })
		if _, err := e.Signal(context.Background(), j.ID, "approved", json.RawMessage(`{"by":"ann"}`)); err != nil {
			t.Fatal(err)
		}
		done := waitState(t, s, j.ID, job.StateSucceeded)
		if string(done.Result) != `{"by": "ann"}` && string(done.Result) != `{"by":"ann"}` {
			t.Fatalf("result %s", done.Result)
		}
	})
}

// TestSignalWaitTimesOut: a job waiting for a signal with a timeout is
// resumed when it passes, told so.
func TestSignalWaitTimesOut(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		e := newEngine(t, s, newLogs(t), engine.Config{Queues: queue(1)})
		engine.Register(e, "approve", func(ctx context.Context, j *engine.Job[struct{}]) (string, error) {
			if j.Resume == nil || j.Resume.Signal == nil {
				return "", engine.WaitForSignal(ctx, "approved", 50*time.Millisecond)
			}
			if j.Resume.Signal.TimedOut {
				return "timed out", nil
			}
			return "approved", nil
		})
		start(t, e)
		j := insert(t, s, job.InsertParams{Kind: "approve"})
		done := waitState(t, s, j.ID, job.StateSucceeded)
		if string(done.Result) != `"timed out"` {
			t.Fatalf("result %s, want timed out", done.Result)
		}
	})
}

// TestWaitingParentsHoldNoSlot: 1 000 parents each spawn a child and
// wait for it, with a pool of 4: the children still run (a waiting job
// holds no slot), and every parent ends. The children go first
// (priority 1): were a waiting parent to hold its slot, the first four
// parents would hold the pool and no child would ever run; and each
// parent can end soon after it waits.
func TestWaitingParentsHoldNoSlot(t *testing.T) {
	if testing.Short() {
		t.Skip("1 000 parents and their children")
	}
	eachStore(t, func(t *testing.T, s store.Store) {
		e := newEngine(t, s, newLogs(t), engine.Config{Queues: queue(4)})
		engine.Register(e, "child", func(ctx context.Context, j *engine.Job[num]) (int, error) { return j.Args.N, nil })
		engine.Register(e, "parent", func(ctx context.Context, j *engine.Job[num]) (int, error) {
			if j.Resume == nil || len(j.Resume.Children) == 0 {
				first := 1
				child := job.InsertParams{Kind: "child", Args: engine.Args(j.Args), Priority: &first}
				if _, err := engine.Spawn(ctx, job.ChildParams{Key: "only", InsertParams: child}); err != nil {
					return 0, err
				}
				return 0, engine.WaitForChildren(ctx)
			}
			var v int
			return v, j.Resume.DecodeChild("only", &v)
		})
		const n = 1000
		params := make([]job.InsertParams, n)
		for i := range params {
			params[i] = job.InsertParams{Kind: "parent", Args: engine.Args(num{i})}
		}
		res, err := s.JobInsertMany(context.Background(), params)
		if err != nil {
			t.Fatal(err)
		}
		start(t, e)
		// The whole run is 3 000 executions and 1 000 waits on a pool of
		// 4, and a woken parent queues behind the parents not yet started
		// (its run_at is its wake-up): longer under -race on a loaded
		// machine than one wait's budget. The test fails on a stall —
		// the queue's depth and the parents' states unchanged for
		// testsignal.Timeout — not on the run's length.
		progress, depth := time.Now(), store.QueueDepth{Available: -1}
		for i, r := range res {
			for {
				j, err := s.JobGet(context.Background(), r.Job.ID)
				if err != nil {
					t.Fatal(err)
				}
				d, err := s.QueueDepth(context.Background(), r.Job.Queue)
				if err != nil {
					t.Fatal(err)
				}
				if d != depth {
					progress, depth = time.Now(), d
				}
				if j.State == job.StateSucceeded {
					if string(j.Result) != fmt.Sprint(i) {
						t.Fatalf("parent %d: result %s", i, j.Result)
					}
					progress = time.Now()
					break
				}
				if j.State.Final() {
					t.Fatalf("parent %d ended %s: %s", i, j.State, j.LastError)
				}
				if time.Since(progress) > testsignal.Timeout {
					t.Fatalf("nothing moved for %s; parent %d is %s, the queue %+v", testsignal.Timeout, i, j.State, d)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	})
}
