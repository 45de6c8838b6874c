package process_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/process"
	"github.com/jobd/jobd/store"
)

// flakyReads is a real store whose ProcessGet fails, as a database that
// does not answer, the first failures times it is called once armed.
type flakyReads struct {
	store.Store
	armed    atomic.Bool
	failures atomic.Int32
}

func (s *flakyReads) ProcessGet(ctx context.Context, ns, id string, page store.HistoryPage) (*store.Process, error) {
	if s.armed.Load() && s.failures.Add(-1) >= 0 {
		return nil, store.Mark(errors.New("connection refused"), store.ErrUnavailable)
	}
	return s.Store.ProcessGet(ctx, ns, id, page)
}

// TestTransientStoreErrorRetriesTask: a task whose store fails before
// its processor is called (ProcessGet, twice) is retried with the queue's
// backoff and then runs: the process stays running, and the processor is
// called exactly once for the call (issue 10, defect 5). Only the
// processor's answer and the zombie rule put a process in error.
func TestTransientStoreErrorRetriesTask(t *testing.T) {
	eachStore(t, func(t *testing.T, driver string) {
		st := openStore(t, driver)
		flaky := &flakyReads{Store: st}
		var calls atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var req process.Request
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if req.Task == process.TaskCall {
				calls.Add(1)
			}
			_ = json.NewEncoder(w).Encode(process.Response{AuxState: json.RawMessage(`{"n":1}`), Response: json.RawMessage(`"ok"`)})
		}))
		t.Cleanup(srv.Close)
		e, err := engine.New(engine.Config{
			Store: st, Logger: slog.New(slog.DiscardHandler),
			Queues: []engine.QueueConfig{{Queue: process.DefaultQueue, Concurrency: 2,
				Backoff: engine.Backoff{Kind: engine.BackoffLinear, Step: 10 * time.Millisecond}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		r, err := process.New(flaky, e, "", []process.Namespace{{Name: "c", Processor: &process.HTTPProcessor{URL: srv.URL}}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })

		if j := run(t, st, r, process.TaskInit, `{}`); j.State != job.StateSucceeded {
			t.Fatalf("init: %s %s", j.State, j.LastError)
		}
		flaky.failures.Store(2)
		flaky.armed.Store(true)
		j := run(t, st, r, process.TaskCall, `{}`)
		if j.State != job.StateSucceeded || j.Attempt != 3 {
			t.Fatalf("call after two failed reads: state %s attempt %d error %q; want succeeded at attempt 3",
				j.State, j.Attempt, j.LastError)
		}
		if n := calls.Load(); n != 1 {
			t.Fatalf("the processor was called %d times for the call, want once", n)
		}
		p, err := st.ProcessGet(context.Background(), "c", "p", store.HistoryPage{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Status != store.ProcessRunning || !jsonEq(p.AuxState, `{"n":1}`) {
			t.Fatalf("process after the call: status %s detail %q aux %s; want running with the call's state",
				p.Status, p.Detail, p.AuxState)
		}
	})
}
