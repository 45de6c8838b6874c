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
	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/internal/remote"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// The failure rules of a Go SDK worker are the engine's (issue 10,
// defect 7): a panic is a retryable failure; a retryable failure waits
// its queue's backoff (the server's configuration) or the handler's
// RetryAfter; at shutdown a job whose handler did not succeed is released,
// its attempt not counted.

// sdkServer serves the API over st, with the retry delays of an engine
// whose pool of queue "hourly" backs off an hour per attempt (the engine
// is not run: jobd serve hands the API its RetryDelay the same way), and
// returns an admin client and a worker client.
func sdkServer(t *testing.T, st store.Store) (admin, worker *client.Client) {
	t.Helper()
	const secret = "s3cret"
	eng, err := engine.New(engine.Config{Store: st, Logger: slog.New(slog.DiscardHandler), Queues: []engine.QueueConfig{
		{Queue: "hourly", Concurrency: 1, Backoff: engine.Backoff{Kind: engine.BackoffLinear, Step: time.Hour}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	workers, err := remote.New(remote.Config{Store: st, Policy: eng, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	admin, url := serve(t, st, httpapi.Config{AdminSecret: secret, Remote: workers}, secret, nil)
	reg, err := admin.CreateWorker(t.Context(), api.WorkerRequest{Name: "sdk"})
	if err != nil {
		t.Fatal(err)
	}
	worker, err = client.New(url, reg.APIKey)
	if err != nil {
		t.Fatal(err)
	}
	return admin, worker
}

// runWorker runs w until the test ends (or stop is called) and returns
// stop, which returns Run's error.
func runWorker(t *testing.T, w *client.Worker) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var err error
	stopped := false
	stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			err = <-done
		}
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// waitJob polls the job until ok says yes (bounded: the job changes in
// the server, which sends the test no signal).
func waitJob(t *testing.T, st store.Store, j *api.Job, what string, ok func(*job.Job) bool) *job.Job {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := st.JobGet(context.Background(), j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if ok(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s never %s: state %s attempt %d error %q", j.ID, what, got.State, got.Attempt, got.LastError)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func journal(t *testing.T, st store.Store, j *api.Job) []job.Event {
	t.Helper()
	evs, err := st.JobEvents(context.Background(), j.ID)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func kinds(evs []job.Event) []job.EventKind {
	out := make([]job.EventKind, len(evs))
	for i, ev := range evs {
		out[i] = ev.Kind
	}
	return out
}

// TestSDKPanicIsRetryable: a handler that panics fails its attempt
// retryably ("panic: …"), as in the engine; the next attempt runs.
func TestSDKPanicIsRetryable(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		admin, wc := sdkServer(t, st)
		w := client.NewWorker(wc, client.WorkerConfig{Queues: []string{"q"}, ClaimWait: time.Second,
			Logger: slog.New(slog.DiscardHandler)})
		client.Handle(w, "k", func(ctx context.Context, task *client.Task[struct{}]) (string, error) {
			if task.Job.Attempt == 1 {
				panic("boom")
			}
			return "ok", nil
		})
		j, _, err := admin.Submit(t.Context(), api.SubmitRequest{Kind: "k", Queue: "q"})
		if err != nil {
			t.Fatal(err)
		}
		// The queue has no pool on the server: the default backoff, about
		// a second, before the second attempt.
		runWorker(t, w)
		got := waitJob(t, st, j, "succeeded", func(j *job.Job) bool { return j.State == job.StateSucceeded })
		evs := journal(t, st, j)
		want := []job.EventKind{job.EventQueued, job.EventClaimed, job.EventRetried, job.EventClaimed, job.EventSucceeded}
		if got.Attempt != 2 || !slices.Equal(kinds(evs), want) || evs[2].Detail != "panic: boom" {
			t.Fatalf("attempt %d, journal %+v; want a retry after \"panic: boom\", then a success", got.Attempt, evs)
		}
	})
}

// TestSDKRetryableFailureWaitsQueueBackoff: a retryable failure waits
// the backoff of its queue's configuration on the server (an hour for
// "hourly"), or the handler's RetryAfter; a permanent one fails the job.
func TestSDKRetryableFailureWaitsQueueBackoff(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		admin, wc := sdkServer(t, st)
		w := client.NewWorker(wc, client.WorkerConfig{Queues: []string{"hourly"}, Concurrency: 3, ClaimWait: time.Second,
			Logger: slog.New(slog.DiscardHandler)})
		client.Handle(w, "fails", func(ctx context.Context, task *client.Task[struct{}]) (string, error) {
			return "", errors.New("upstream down")
		})
		client.Handle(w, "later", func(ctx context.Context, task *client.Task[struct{}]) (string, error) {
			return "", client.RetryAfter(errors.New("come back later"), 3*time.Hour)
		})
		client.Handle(w, "bad", func(ctx context.Context, task *client.Task[struct{}]) (string, error) {
			return "", client.Permanent(errors.New("bad input"))
		})
		submit := func(kind string) *api.Job {
			j, _, err := admin.Submit(t.Context(), api.SubmitRequest{Kind: kind, Queue: "hourly"})
			if err != nil {
				t.Fatal(err)
			}
			return j
		}
		fails, later, bad := submit("fails"), submit("later"), submit("bad")
		before := time.Now()
		runWorker(t, w)
		retried := func(j *job.Job) bool { return j.State == job.StateQueued && j.Attempt == 1 }
		got := waitJob(t, st, fails, "queued again", retried)
		if d := got.RunAt.Sub(before); d < 50*time.Minute || d > 70*time.Minute || got.LastError != "upstream down" {
			t.Errorf("retryable failure: run_at %s after the start, error %q; want the queue's hour", d, got.LastError)
		}
		got = waitJob(t, st, later, "queued again", retried)
		if d := got.RunAt.Sub(before); d < 170*time.Minute || d > 190*time.Minute || got.LastError != "come back later" {
			t.Errorf("RetryAfter: run_at %s after the start, error %q; want three hours", d, got.LastError)
		}
		got = waitJob(t, st, bad, "failed", func(j *job.Job) bool { return j.State == job.StateFailed })
		if got.Attempt != 1 || got.LastError != "bad input" {
			t.Errorf("permanent failure: attempt %d error %q", got.Attempt, got.LastError)
		}
	})
}

// TestSDKShutdownReleases: at shutdown, a job whose handler did not
// finish within the shutdown timeout is released: queued again at once,
// its attempt not counted (journal "requeued"), as the engine does; a
// handler that ignores its cancel has its job released without it.
func TestSDKShutdownReleases(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		admin, wc := sdkServer(t, st)
		w := client.NewWorker(wc, client.WorkerConfig{Queues: []string{"q"}, Concurrency: 2, ClaimWait: time.Second,
			ShutdownTimeout: time.Millisecond, StopGrace: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
		started := make(chan string, 2)
		client.Handle(w, "polite", func(ctx context.Context, task *client.Task[struct{}]) (string, error) {
			started <- "polite"
			<-ctx.Done()
			return "", context.Cause(ctx)
		})
		stuck := make(chan struct{})
		t.Cleanup(func() { close(stuck) })
		client.Handle(w, "stuck", func(ctx context.Context, task *client.Task[struct{}]) (string, error) {
			started <- "stuck"
			<-stuck // ignores its cancel
			return "too late", nil
		})
		var jobs []*api.Job
		for _, kind := range []string{"polite", "stuck"} {
			j, _, err := admin.Submit(t.Context(), api.SubmitRequest{Kind: kind, Queue: "q"})
			if err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, j)
		}
		stop := runWorker(t, w)
		<-started
		<-started
		if err := stop(); err != nil {
			t.Fatalf("Run: %v", err)
		}
		for _, j := range jobs {
			got, err := st.JobGet(context.Background(), j.ID)
			if err != nil {
				t.Fatal(err)
			}
			want := []job.EventKind{job.EventQueued, job.EventClaimed, job.EventRequeued}
			if got.State != job.StateQueued || got.Attempt != 0 || !slices.Equal(kinds(journal(t, st, j)), want) {
				t.Fatalf("%s job after the shutdown: state %s attempt %d journal %v; want queued, attempt 0, %v",
					j.Kind, got.State, got.Attempt, kinds(journal(t, st, j)), want)
			}
		}
	})
}
