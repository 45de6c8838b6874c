package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestSDKStepsChildrenAndSignal: through a remote worker on a real
// server, a handler's steps run once across a retry, a parent spawns
// ten children, waits for them holding no slot (a pool of one runs
// them) and sums them, and a job waiting for a signal is woken by
// Client.Signal.
func TestSDKStepsChildrenAndSignal(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		admin, wc := sdkServer(t, st)
		w := client.NewWorker(wc, client.WorkerConfig{Queues: []string{"q"}, Concurrency: 1, ClaimWait: time.Second,
			Logger: slog.New(slog.DiscardHandler)})
		var firstRuns, failedOnce atomic.Int32
		client.Handle(w, "steps", func(ctx context.Context, task *client.Task[struct{}]) (int, error) {
			a, err := client.Step(ctx, "first", func(ctx context.Context) (int, error) { firstRuns.Add(1); return 40, nil })
			if err != nil {
				return 0, err
			}
			b, err := client.Step(ctx, "second", func(ctx context.Context) (int, error) {
				if failedOnce.Add(1) == 1 {
					return 0, client.RetryAfter(errors.New("not yet"), 0)
				}
				return 2, nil
			})
			return a + b, err
		})
		client.Handle(w, "square", func(ctx context.Context, task *client.Task[struct{ N int }]) (int, error) {
			return task.Args.N * task.Args.N, nil
		})
		client.Handle(w, "sum", func(ctx context.Context, task *client.Task[struct{}]) (int, error) {
			if task.Job.Children == nil {
				kids := make([]client.Child, 10)
				for i := range kids {
					kids[i] = client.Child{Key: fmt.Sprint(i), SubmitRequest: api.SubmitRequest{Kind: "square", Queue: "q",
						Args: json.RawMessage(fmt.Sprintf(`{"N":%d}`, i+1))}}
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
					return 0, err
				}
				sum += v
			}
			return sum, nil
		})
		client.Handle(w, "approve", func(ctx context.Context, task *client.Task[struct{}]) (json.RawMessage, error) {
			if task.Job.Signal == nil {
				return nil, client.WaitForSignal(ctx, "ok", 0)
			}
			return task.Job.Signal.Payload, nil
		})
		runWorker(t, w)
		submit := func(kind string) *api.Job {
			j, _, err := admin.Submit(t.Context(), api.SubmitRequest{Kind: kind, Queue: "q"})
			if err != nil {
				t.Fatal(err)
			}
			return j
		}
		steps, sum, approve := submit("steps"), submit("sum"), submit("approve")
		if got := waitJob(t, st, steps, "succeeded", func(j *job.Job) bool { return j.State == job.StateSucceeded }); string(got.Result) != "42" || firstRuns.Load() != 1 {
			t.Fatalf("steps: result %s, first step ran %d times", got.Result, firstRuns.Load())
		}
		if got := waitJob(t, st, sum, "succeeded", func(j *job.Job) bool { return j.State == job.StateSucceeded }); string(got.Result) != "385" {
			t.Fatalf("sum: %s, want 385", got.Result)
		}
		waitJob(t, st, approve, "waiting", func(j *job.Job) bool { return j.State == job.StateWaiting })
		if _, err := admin.Signal(t.Context(), approve.ID, "ok", json.RawMessage(`"yes"`)); err != nil {
			t.Fatal(err)
		}
		if got := waitJob(t, st, approve, "succeeded", func(j *job.Job) bool { return j.State == job.StateSucceeded }); string(got.Result) != `"yes"` {
			t.Fatalf("approve: %s", got.Result)
		}
	})
}
