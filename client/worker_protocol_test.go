package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

const workerSecret = "s3cret-admin"

// raw is a handler's raw result.
type raw = json.RawMessage

// quiet discards the worker's logs.
var quiet = slog.New(slog.DiscardHandler)

// slogTo logs to w, at debug.
func slogTo(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// workerFixture is an API over a store, behind a real HTTP server that
// counts the connections opened to it, with a registered worker.
type workerFixture struct {
	st     store.Store
	admin  *client.Client
	worker *client.Client
	conns  atomic.Int64
}

func newWorkerFixture(t *testing.T, st store.Store, wrap func(http.Handler) http.Handler) *workerFixture {
	t.Helper()
	h, err := httpapi.New(httpapi.Config{Store: st, AdminSecret: workerSecret, PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		h = wrap(h)
	}
	f := &workerFixture{st: st}
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			f.conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	if f.admin, err = client.New(srv.URL, workerSecret); err != nil {
		t.Fatal(err)
	}
	reg, err := f.admin.CreateWorker(t.Context(), api.WorkerRequest{Name: "w"})
	if err != nil {
		t.Fatal(err)
	}
	if f.worker, err = client.New(srv.URL, reg.APIKey); err != nil {
		t.Fatal(err)
	}
	return f
}

// waitCount polls the store until n jobs of queue are in state (bounded:
// the server sends the test no signal).
func waitCount(t *testing.T, st store.Store, queue string, state job.State, n int64) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		res, err := st.JobList(context.Background(), store.ListParams{Queue: queue, States: []job.State{state}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Total == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d jobs of %s %s, want %d", res.Total, queue, state, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWorkerConnections: a 32-slot worker working 1 000 jobs keeps its
// connections to the server and reuses them (its claims and its batched
// outcomes share a few), instead of opening one per job and leaving it
// in TIME_WAIT, as http.DefaultClient's 2 idle connections per host made
// it do.
func TestWorkerConnections(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		f := newWorkerFixture(t, st, nil)
		reqs := make([]api.SubmitRequest, 1000)
		for i := range reqs {
			reqs[i] = api.SubmitRequest{Queue: "many", Kind: "noop"}
		}
		items, err := f.admin.SubmitBatch(t.Context(), reqs)
		if err != nil || len(items) != 1000 || items[999].Status != http.StatusCreated {
			t.Fatalf("SubmitBatch: %d answers, %v", len(items), err)
		}
		before := f.conns.Load()
		w := client.NewWorker(f.worker, client.WorkerConfig{Queues: []string{"many"}, Concurrency: 32, ClaimWait: time.Second, Logger: quiet})
		w.HandleAny(func(context.Context, *client.Task[raw]) (raw, error) { return raw(`{}`), nil })
		stop := runWorker(t, w)
		waitCount(t, st, "many", job.StateSucceeded, 1000)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		opened := f.conns.Load() - before
		t.Logf("a 32-slot worker opened %d connections for 1000 jobs", opened)
		// A claim, a batch of outcomes and a heartbeat are all it sends at
		// once.
		if opened > 6 {
			t.Fatalf("the worker opened %d connections, want its few kept alive", opened)
		}
	})
}

// dropFirst answers the first request of path without an answer: it
// serves it (what it writes is written), then closes the connection
// before a byte of the answer. It records every answer to path it lets
// through.
type dropFirst struct {
	path    string
	dropped atomic.Bool
	mu      sync.Mutex
	answers []string
}

func (d *dropFirst) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != d.path {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if d.dropped.CompareAndSwap(false, true) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		d.mu.Lock()
		d.answers = append(d.answers, rec.Body.String())
		d.mu.Unlock()
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// TestWorkerResendsLostOutcome: the answer to a worker's outcomes is
// lost (the connection closes after the server applied them): the worker
// sends them again, and the server answers them as repeats; the job
// succeeded once.
func TestWorkerResendsLostOutcome(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		d := &dropFirst{path: "/api/v1/worker/outcomes"}
		f := newWorkerFixture(t, st, d.wrap)
		j, _, err := f.admin.Submit(t.Context(), api.SubmitRequest{Queue: "lost", Kind: "noop"})
		if err != nil {
			t.Fatal(err)
		}
		var logs syncBuffer
		w := client.NewWorker(f.worker, client.WorkerConfig{Queues: []string{"lost"}, ClaimWait: time.Second,
			Logger: slogTo(&logs)})
		var runs atomic.Int32
		w.HandleAny(func(context.Context, *client.Task[raw]) (raw, error) {
			runs.Add(1)
			return raw(`{"ok":true}`), nil
		})
		stop := runWorker(t, w)
		waitCount(t, st, "lost", job.StateSucceeded, 1)
		deadline := time.Now().Add(30 * time.Second)
		for d.count() == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond) // the resend's answer
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if !d.dropped.Load() || d.count() != 1 || !strings.Contains(d.first(), `"repeat":true`) {
			t.Fatalf("dropped %v; answers let through %q, want one repeat", d.dropped.Load(), d.answers)
		}
		got, err := st.JobGet(t.Context(), j.ID)
		if err != nil || got.State != job.StateSucceeded || got.Attempt != 1 || runs.Load() != 1 {
			t.Fatalf("job %+v (%v) after %d runs, want succeeded at its first attempt", got, err, runs.Load())
		}
		if strings.Contains(logs.String(), "given up") || strings.Contains(logs.String(), "refused") {
			t.Fatalf("the worker logged:\n%s", logs.String())
		}
	})
}

func (d *dropFirst) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.answers)
}

func (d *dropFirst) first() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.answers[0]
}

// TestWorkerLearnsCancelFromCheckpoint: a handler whose job's cancel was
// requested learns it from its next checkpoint's answer, whatever the
// heartbeats: its context is cancelled with ErrJobCanceled.
func TestWorkerLearnsCancelFromCheckpoint(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		f := newWorkerFixture(t, st, nil)
		j, _, err := f.admin.Submit(t.Context(), api.SubmitRequest{Queue: "cp", Kind: "slow", LeaseTTL: api.Duration(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		started, canceled := make(chan struct{}), make(chan struct{})
		cause := make(chan error, 1)
		w := client.NewWorker(f.worker, client.WorkerConfig{Queues: []string{"cp"}, HeartbeatInterval: time.Hour, Logger: quiet})
		w.HandleAny(func(ctx context.Context, task *client.Task[raw]) (raw, error) {
			close(started)
			<-canceled
			if err := task.SaveCheckpoint(ctx, map[string]int{"page": 2}); err != nil {
				cause <- err
				return nil, err
			}
			cause <- context.Cause(ctx)
			return raw(`{}`), nil
		})
		runWorker(t, w)
		<-started
		if _, err := f.admin.Cancel(t.Context(), j.ID); err != nil {
			t.Fatal(err)
		}
		close(canceled)
		if err := <-cause; !errors.Is(err, client.ErrJobCanceled) {
			t.Fatalf("after the checkpoint: cause %v, want ErrJobCanceled", err)
		}
	})
}

// TestSubmitBatchClient: SubmitBatch answers each job; a refused batch
// is an *Error naming the job's member, and creates nothing.
func TestSubmitBatchClient(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		f := newWorkerFixture(t, st, nil)
		items, err := f.admin.SubmitBatch(t.Context(), []api.SubmitRequest{
			{Kind: "a", IdempotencyKey: "k1"}, {Kind: "b"}, {Kind: "a", IdempotencyKey: "k1"},
		})
		if err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprint(items[0].Status, items[1].Status, items[2].Status)
		if got != "201 201 200" || items[2].ID != items[0].ID {
			t.Fatalf("answers %+v", items)
		}
		_, err = f.admin.SubmitBatch(t.Context(), []api.SubmitRequest{{Kind: "ok"}, {Queue: "jobd.x", Kind: "k"}})
		var e *client.Error
		if !errors.As(err, &e) || e.StatusCode != 422 || e.Problem.Field != "jobs[1].queue" {
			t.Fatalf("a refused batch: %v", err)
		}
		if n, _ := f.admin.Count(t.Context(), client.ListOptions{}); n != 2 {
			t.Fatalf("%d jobs, want 2", n)
		}
	})
}

// syncBuffer is a log sink safe for the worker's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
