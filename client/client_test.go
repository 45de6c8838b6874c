package client_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

func TestJobs(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		c, _ := serve(t, st, httpapi.Config{}, "", nil)
		ctx := t.Context()
		prio := 7
		runAt := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
		j, created, err := c.Submit(ctx, api.SubmitRequest{Queue: "q", Kind: "k", Args: []byte(`{"a":1}`), Priority: &prio,
			RunAt: &runAt, MaxAttempts: 2, LeaseTTL: api.Duration(time.Minute), IdempotencyKey: "once"})
		if err != nil || !created {
			t.Fatalf("submit: created %v, %v", created, err)
		}
		if j.Priority != 7 || !j.RunAt.Equal(runAt) || j.MaxAttempts != 2 || j.IdempotencyKey != "once" {
			t.Errorf("submitted %+v", j)
		}
		again, created, err := c.Submit(ctx, api.SubmitRequest{Queue: "q", Kind: "k", Args: []byte(`{"a":1}`), Priority: &prio,
			RunAt: &runAt, MaxAttempts: 2, LeaseTTL: api.Duration(time.Minute), IdempotencyKey: "once"})
		if err != nil || created || again.ID != j.ID {
			t.Fatalf("resubmit: created %v, %+v, %v", created, again, err)
		}
		// The key with another request: refused, naming nothing of the job.
		_, _, err = c.Submit(ctx, api.SubmitRequest{Queue: "q", Kind: "k", IdempotencyKey: "once"})
		if !errors.Is(err, client.ErrIdempotencyMismatch) || !errors.Is(err, client.ErrInvalid) || strings.Contains(err.Error(), j.ID.String()) {
			t.Errorf("resubmit with another request: %v, want ErrIdempotencyMismatch", err)
		}
		got, err := c.Get(ctx, j.ID)
		if err != nil || got.ID != j.ID {
			t.Fatalf("get: %v", err)
		}
		for range 4 {
			if _, _, err := c.Submit(ctx, api.SubmitRequest{Kind: "other"}); err != nil {
				t.Fatal(err)
			}
		}
		page, err := c.List(ctx, client.ListOptions{Kind: "other", Limit: 3})
		if err != nil || len(page.Jobs) != 3 || page.Total != 4 || page.NextCursor == "" {
			t.Fatalf("list: %+v, %v", page, err)
		}
		page, err = c.List(ctx, client.ListOptions{Kind: "other", Limit: 3, Cursor: page.NextCursor})
		if err != nil || len(page.Jobs) != 1 || page.NextCursor != "" {
			t.Fatalf("second page: %+v, %v", page, err)
		}
		feed, err := c.List(ctx, client.ListOptions{UpdatedSince: time.Unix(0, 0), States: []api.State{api.StateQueued}})
		if err != nil || len(feed.Jobs) != 5 || feed.ResumeCursor == "" {
			t.Fatalf("feed: %+v, %v", feed, err)
		}
		if n, err := c.Count(ctx, client.ListOptions{States: []api.State{api.StateQueued}, Queue: "default"}); err != nil || n != 4 {
			t.Errorf("count: %d, %v", n, err)
		}

		if j, err = c.Cancel(ctx, j.ID); err != nil || j.State != api.StateCanceled {
			t.Fatalf("cancel: %+v, %v", j, err)
		}
		if _, err = c.Cancel(ctx, j.ID); !errors.Is(err, client.ErrConflict) {
			t.Errorf("cancel of a canceled job: %v", err)
		}
		if j, err = c.Retry(ctx, j.ID); err != nil || j.State != api.StateQueued {
			t.Fatalf("retry: %+v, %v", j, err)
		}
		evs, err := c.Events(ctx, j.ID)
		if err != nil || len(evs) != 3 || evs[0].Kind != "queued" || evs[2].Kind != "manual-retry" {
			t.Errorf("events: %+v, %v", evs, err)
		}
	})
}

func TestErrors(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		ctx := t.Context()
		admin, url := serve(t, st, httpapi.Config{AdminSecret: "secret"}, "secret", nil)

		_, err := admin.Get(ctx, uuid.New())
		var apiErr *client.Error
		if !errors.Is(err, client.ErrNotFound) || !errors.As(err, &apiErr) || apiErr.Problem.Type != api.ProblemNotFound {
			t.Errorf("get unknown: %v", err)
		}
		_, _, err = admin.Submit(ctx, api.SubmitRequest{Kind: ""})
		if !errors.Is(err, client.ErrInvalid) || !errors.As(err, &apiErr) || apiErr.Problem.Field != "kind" || apiErr.StatusCode != 422 {
			t.Errorf("submit without kind: %v", err)
		}

		key, err := admin.CreateKey(ctx, "reader", []string{api.ScopeRead})
		if err != nil || !strings.HasPrefix(key.Key, "jobd_") {
			t.Fatalf("create key: %+v, %v", key, err)
		}
		reader, err := client.New(url, key.Key)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := reader.Submit(ctx, api.SubmitRequest{Kind: "k"}); !errors.Is(err, client.ErrForbidden) {
			t.Errorf("submit with a read key: %v", err)
		}
		stranger, _ := client.New(url, "jobd_nope")
		_, err = stranger.Queues(ctx)
		if !errors.Is(err, client.ErrUnauthorized) {
			t.Fatalf("queues with a wrong key: %v", err)
		}
		if strings.Contains(err.Error(), "jobd_nope") {
			t.Errorf("an error shows the credential: %v", err)
		}
		if _, err := client.New("localhost:8080", ""); err == nil {
			t.Error("a URL without scheme was accepted")
		}
	})
}

func TestQueuesKeysStatus(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		ctx := t.Context()
		c, _ := serve(t, st, httpapi.Config{Version: "v9"}, "", nil)
		if _, _, err := c.Submit(ctx, api.SubmitRequest{Queue: "mail", Kind: "k"}); err != nil {
			t.Fatal(err)
		}
		q, err := c.PauseQueue(ctx, "mail")
		if err != nil || !q.Paused || q.Counts[api.StateQueued] != 1 {
			t.Errorf("pause: %+v, %v", q, err)
		}
		qs, err := c.Queues(ctx)
		if err != nil || len(qs) != 1 || !qs[0].Paused {
			t.Errorf("queues: %+v, %v", qs, err)
		}
		if q, err = c.ResumeQueue(ctx, "mail"); err != nil || q.Paused {
			t.Errorf("resume: %+v, %v", q, err)
		}

		k, err := c.CreateKey(ctx, "ci", []string{api.ScopeSubmit, api.ScopeRead})
		if err != nil {
			t.Fatal(err)
		}
		keys, err := c.ListKeys(ctx)
		if err != nil || len(keys) != 1 || keys[0].ID != k.ID || keys[0].Key != "" || len(keys[0].Scopes) != 2 {
			t.Errorf("list keys: %+v, %v", keys, err)
		}
		if err := c.RevokeKey(ctx, k.ID); err != nil {
			t.Fatal(err)
		}
		if err := c.RevokeKey(ctx, k.ID); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("revoke twice: %v", err)
		}
		s, err := c.Status(ctx)
		if err != nil || s.Version != "v9" || s.Jobs[api.StateQueued] != 1 {
			t.Errorf("status: %+v, %v", s, err)
		}
	})
}

// TestWait follows a job through the event stream: the test moves the job
// on only after Wait has reported the previous change.
func TestWait(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		var streams atomic.Int32
		c, _ := serve(t, st, httpapi.Config{}, "", countStreams(&streams, 1))
		ctx := t.Context()
		j, _, err := c.Submit(ctx, api.SubmitRequest{Kind: "k"})
		if err != nil {
			t.Fatal(err)
		}
		updates := make(chan api.Job, 16)
		type result struct {
			j   *api.Job
			err error
		}
		done := make(chan result, 1)
		go func() {
			j, err := c.Wait(ctx, j.ID, func(j api.Job) { updates <- j })
			done <- result{j, err}
		}()
		if u := <-updates; u.State != api.StateQueued {
			t.Fatalf("first update %s", u.State)
		}
		run := claim(t, st, "default")
		if u := <-updates; u.State != api.StateRunning {
			t.Fatalf("update after claim: %s", u.State)
		}
		if _, err := st.JobSetProgress(ctx, store.Lease{ID: run.ID, Token: run.LeaseToken}, job.Progress{Phase: "p", Done: 1, Total: 2}); err != nil {
			t.Fatal(err)
		}
		if u := <-updates; u.Progress.Done != 1 || u.Progress.Phase != "p" {
			t.Fatalf("progress update %+v", u.Progress)
		}
		finish(t, st, run, store.OutcomeSucceeded, `{"ok":1}`)
		r := <-done
		if r.err != nil || r.j.State != api.StateSucceeded || string(r.j.Result) != `{"ok":1}` {
			t.Fatalf("wait: %+v, %v", r.j, r.err)
		}
		if n := streams.Load(); n < 2 {
			t.Errorf("%d stream requests: the dropped first stream was not followed again", n)
		}
		if _, err := c.Wait(ctx, uuid.New(), nil); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("wait for an unknown job: %v", err)
		}
	})
}

// countStreams counts stream requests and ends the first drop of them at
// once, empty, as a proxy or a restarting server might.
func countStreams(n *atomic.Int32, drop int32) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/stream") && n.Add(1) <= drop {
				w.Header().Set("Content-Type", "text/event-stream")
				return
			}
			h.ServeHTTP(w, r)
		})
	}
}

// TestWaitFallback: a server without the stream route is long-polled.
func TestWaitFallback(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		var polls atomic.Int32
		noStream := func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "/stream") {
					http.NotFound(w, r)
					return
				}
				if r.URL.Query().Get("wait") != "" {
					polls.Add(1)
				}
				h.ServeHTTP(w, r)
			})
		}
		c, _ := serve(t, st, httpapi.Config{}, "", noStream)
		ctx := t.Context()
		j, _, err := c.Submit(ctx, api.SubmitRequest{Kind: "k"})
		if err != nil {
			t.Fatal(err)
		}
		first := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			var once atomic.Bool
			got, err := c.Wait(ctx, j.ID, func(api.Job) {
				if once.CompareAndSwap(false, true) {
					close(first)
				}
			})
			if err == nil && got.State != api.StateFailed {
				err = errors.New("wait returned state " + string(got.State))
			}
			done <- err
		}()
		<-first
		finish(t, st, claim(t, st, "default"), store.OutcomeFailed, "")
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if polls.Load() == 0 {
			t.Error("Wait did not long-poll")
		}
	})
}

// TestWorkerTextWithNUL: a NUL in a worker's error or phase (a program's
// stderr may hold one), which the server refuses, is sent as U+FFFD, so
// that the failure is not lost.
func TestWorkerTextWithNUL(t *testing.T) {
	const secret = "s3cret"
	eachStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		admin, url := serve(t, st, httpapi.Config{AdminSecret: secret}, secret, nil)
		reg, err := admin.CreateWorker(ctx, api.WorkerRequest{Name: "w"})
		if err != nil {
			t.Fatal(err)
		}
		w, err := client.New(url, reg.APIKey)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := admin.Submit(ctx, api.SubmitRequest{Kind: "k", Queue: "q"}); err != nil {
			t.Fatal(err)
		}
		got, err := w.Claim(ctx, []string{"q"}, 1, 0)
		if err != nil || len(got) != 1 {
			t.Fatalf("claim: %v, %v", got, err)
		}
		j := got[0]
		if _, err := w.ReportProgress(ctx, j.ID, j.LeaseToken, api.Progress{Phase: "a\x00b", Done: 1, Total: 2}); err != nil {
			t.Fatalf("progress with a NUL: %v", err)
		}
		if _, err := w.Fail(ctx, j.ID, j.LeaseToken, "exit 1: \x00oops", false); err != nil {
			t.Fatalf("fail with a NUL: %v", err)
		}
		final, err := admin.Get(ctx, j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if final.State != api.StateFailed || final.Error != "exit 1: \uFFFDoops" || final.Progress.Phase != "a\uFFFDb" {
			t.Fatalf("job %s, error %q, phase %q", final.State, final.Error, final.Progress.Phase)
		}
	})
}
