package client_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// TestSDKThrottle: a handler's client.Throttle fails the job with the
// fail call's "throttle": queued again after the delay, its attempt not
// counted (even its last one), journal "throttled", as engine.Throttle
// does in the engine; it wins over Permanent around it.
func TestSDKThrottle(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		admin, wc := sdkServer(t, st)
		w := client.NewWorker(wc, client.WorkerConfig{Queues: []string{"q"}, Concurrency: 2, ClaimWait: time.Second,
			Logger: slog.New(slog.DiscardHandler)})
		client.Handle(w, "busy", func(ctx context.Context, task *client.Task[struct{}]) (string, error) {
			return "", client.Throttle(errors.New("the API answered 429"), 2*time.Hour)
		})
		client.Handle(w, "wrapped", func(ctx context.Context, task *client.Task[struct{}]) (string, error) {
			return "", client.Permanent(client.Throttle(errors.New("overloaded"), 3*time.Hour))
		})
		submit := func(kind string) *api.Job {
			j, _, err := admin.Submit(t.Context(), api.SubmitRequest{Kind: kind, Queue: "q", MaxAttempts: 1})
			if err != nil {
				t.Fatal(err)
			}
			return j
		}
		busy, wrapped := submit("busy"), submit("wrapped")
		before := time.Now()
		runWorker(t, w)
		for _, c := range []struct {
			j     *api.Job
			delay time.Duration
			msg   string
		}{{busy, 2 * time.Hour, "the API answered 429"}, {wrapped, 3 * time.Hour, "overloaded"}} {
			got := waitJob(t, st, c.j, "throttled", func(j *job.Job) bool { return j.State == job.StateQueued && j.LastError != "" })
			want := []job.EventKind{job.EventQueued, job.EventClaimed, job.EventThrottled}
			if d := got.RunAt.Sub(before); d < c.delay || d > c.delay+10*time.Minute || got.Attempt != 0 ||
				got.LastError != c.msg || !slices.Equal(kinds(journal(t, st, c.j)), want) {
				t.Errorf("%s: run_at %s after the start, attempt %d, error %q, journal %v; want %s, 0, %q, %v",
					c.j.Kind, d, got.Attempt, got.LastError, kinds(journal(t, st, c.j)), c.delay, c.msg, want)
			}
		}
	})
}
