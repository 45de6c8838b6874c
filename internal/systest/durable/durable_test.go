package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
	"github.com/jobd/jobd/internal/testutil/pgtest/migrated"
)

// eachDatabase runs fn as a parallel subtest on a SQLite file and on a
// PostgreSQL database.
func eachDatabase(t *testing.T, fn func(t *testing.T, db string)) {
	if testing.Short() {
		t.Skip("real jobd serve nodes, SIGKILLed")
	}
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			if d == "sqlite" {
				fn(t, "sqlite:"+filepath.Join(t.TempDir(), "jobd.db"))
				return
			}
			fn(t, migrated.NewDatabase(t))
		})
	}
}

// TestStepCrash: the node a worker reports to is SIGKILLed while a step
// of its job runs; the step's work ends but its record cannot be made.
// On the node that carries on (another one on PostgreSQL, the same file
// restarted on SQLite), the rescued job runs again: the step before
// returns its record without running, the interrupted step runs again,
// the one after once.
func TestStepCrash(t *testing.T) {
	eachDatabase(t, func(t *testing.T, db string) {
		dir := logDir(t)
		a := startNode(t, dir, "a", db)
		var one, two, three atomic.Int32
		inTwo, release := make(chan struct{}), make(chan struct{})
		handler := func(ctx context.Context, task *client.Task[struct{}]) (int, error) {
			x, err := client.Step(ctx, "one", func(context.Context) (int, error) { one.Add(1); return 1, nil })
			if err != nil {
				return 0, err
			}
			y, err := client.Step(ctx, "two", func(context.Context) (int, error) {
				if two.Add(1) == 1 {
					close(inTwo)
					<-release
				}
				return 2, nil
			})
			if err != nil {
				return 0, err
			}
			z, err := client.Step(ctx, "three", func(context.Context) (int, error) { three.Add(1); return 3, nil })
			return x + y + z, err
		}
		w1 := workerOn(t, a, "w1", "crash", 1)
		client.Handle(w1, "steps", handler)
		stop1 := run(t, w1)
		ttl := api.Duration(time.Second)
		j, _, err := admin(t, a).Submit(t.Context(), api.SubmitRequest{Kind: "steps", Queue: "crash", LeaseTTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-inTwo:
		case <-time.After(2 * time.Minute):
			t.Fatal("the job's second step never ran")
		}
		a.kill()
		close(release) // the work is done; its record has no node to go to
		stop1()
		b := startNode(t, dir, "b", db)
		w2 := workerOn(t, b, "w2", "crash", 1)
		client.Handle(w2, "steps", handler)
		run(t, w2)
		got := waitJob(t, admin(t, b), j.ID, "succeeded", func(j *api.Job) bool { return j.State == api.StateSucceeded })
		if string(got.Result) != "6" || one.Load() != 1 || two.Load() != 2 || three.Load() != 1 {
			t.Fatalf("result %s; steps ran %d, %d, %d times; want 6, and 1, 2, 1", got.Result, one.Load(), two.Load(), three.Load())
		}
	})
}

// TestParentSurvivesKill: a parent spawns 100 children and waits; the
// node is SIGKILLed while it waits (its children partly run); on the
// node that carries on the parent ends with the right sum, and there are
// 100 children, none spawned twice.
func TestParentSurvivesKill(t *testing.T) {
	eachDatabase(t, func(t *testing.T, db string) {
		dir := logDir(t)
		a := startNode(t, dir, "a", db)
		var parentRuns atomic.Int32
		var mu sync.Mutex
		squares := 0
		someDone := make(chan struct{})
		register := func(w *client.Worker) {
			client.Handle(w, "sum", func(ctx context.Context, task *client.Task[struct{}]) (int, error) {
				parentRuns.Add(1)
				if task.Job.Children == nil {
					kids := make([]client.Child, 100)
					for i := range kids {
						kids[i] = client.Child{Key: fmt.Sprint(i), SubmitRequest: api.SubmitRequest{Kind: "square", Queue: "tree",
							Args: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i+1)), LeaseTTL: api.Duration(time.Second)}}
					}
					if _, err := client.Spawn(ctx, kids...); err != nil {
						return 0, err
					}
					return 0, client.WaitForChildren(ctx)
				}
				sum := 0
				for _, c := range task.Job.Children {
					var v int
					if err := json.Unmarshal(c.Result, &v); err != nil {
						return 0, fmt.Errorf("child %s (%s): %w", c.ID, c.State, err)
					}
					sum += v
				}
				return sum, nil
			})
			client.Handle(w, "square", func(ctx context.Context, task *client.Task[struct{ N int }]) (int, error) {
				mu.Lock()
				if squares++; squares == 20 {
					close(someDone)
				}
				mu.Unlock()
				return task.Args.N * task.Args.N, nil
			})
		}
		w1 := workerOn(t, a, "w1", "tree", 2)
		register(w1)
		stop1 := run(t, w1)
		p, _, err := admin(t, a).Submit(t.Context(), api.SubmitRequest{Kind: "sum", Queue: "tree", LeaseTTL: api.Duration(time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-someDone:
		case <-time.After(2 * time.Minute):
			t.Fatal("the children never ran")
		}
		a.kill()
		stop1()
		b := startNode(t, dir, "b", db)
		w2 := workerOn(t, b, "w2", "tree", 4)
		register(w2)
		run(t, w2)
		c := admin(t, b)
		got := waitJob(t, c, p.ID, "succeeded", func(j *api.Job) bool { return j.State == api.StateSucceeded })
		if string(got.Result) != "338350" {
			t.Fatalf("sum %s, want 338350 (the parent ran %d times)", got.Result, parentRuns.Load())
		}
		kids, err := c.List(t.Context(), client.ListOptions{Kind: "square", Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if kids.Total != 100 {
			t.Fatalf("%d children, want 100", kids.Total)
		}
	})
}

// TestSignalAcrossNodes: on PostgreSQL, a job waits for a signal on a
// worker of node a; the signal is sent through node b; the job is
// resumed on a by the NOTIFY path: both nodes poll once an hour and the
// worker's claim waits 60 s, so within the test's 30 s only the wake-up
// can bring it. The latency from the signal's answer to the resumed
// handler is logged.
func TestSignalAcrossNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("real jobd serve nodes")
	}
	t.Parallel()
	db := migrated.NewDatabase(t)
	dir := logDir(t)
	a := startNode(t, dir, "a", db, "--poll-interval", "1h")
	b := startNode(t, dir, "b", db, "--poll-interval", "1h")
	w := workerOn(t, a, "w", "approvals", 1)
	resumed := make(chan time.Time, 1)
	client.Handle(w, "approve", func(ctx context.Context, task *client.Task[struct{}]) (json.RawMessage, error) {
		if task.Job.Signal == nil {
			return nil, client.WaitForSignal(ctx, "approved", 0)
		}
		resumed <- time.Now()
		return task.Job.Signal.Payload, nil
	})
	run(t, w)
	j, _, err := admin(t, a).Submit(t.Context(), api.SubmitRequest{Kind: "approve", Queue: "approvals"})
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, admin(t, a), j.ID, "waiting", func(j *api.Job) bool { return j.State == api.StateWaiting })
	// The worker's next claim is waiting on a by now (its slot is free).
	cb := admin(t, b)
	sent := time.Now()
	res, err := cb.Signal(t.Context(), j.ID, "approved", json.RawMessage(`{"by":"ann"}`))
	answered := time.Now()
	if err != nil || !res.Delivered {
		t.Fatalf("signal: %+v, %v", res, err)
	}
	select {
	case at := <-resumed:
		t.Logf("from the signal's request to node b to the handler's resumption on node a's worker: %s (the signal's answer took %s)",
			at.Sub(sent), answered.Sub(sent))
	case <-time.After(30 * time.Second):
		t.Fatal("the signal did not wake the job through the other node")
	}
	got := waitJob(t, admin(t, a), j.ID, "succeeded", func(j *api.Job) bool { return j.State == api.StateSucceeded })
	if string(got.Result) != `{"by": "ann"}` && string(got.Result) != `{"by":"ann"}` {
		t.Fatalf("result %s", got.Result)
	}
}
