package process_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/internal/testutil/storewatch"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/process"
	"github.com/jobd/jobd/store"
)

// counter is a real HTTP processor: aux_state {"n": N}; a call adds 1
// and answers the new N; a call with args {"fail": true} fails (500);
// a call with {"timer": seconds} sets a timer; timeout adds 100.
// A call with {"block": true} signals g.started and waits for g.release;
// {"at": RFC3339} sets the timer at that instant.
func counter(t *testing.T, g *gate) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req process.Request
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var st struct{ N int }
		_ = json.Unmarshal(req.Process.AuxState, &st)
		var args struct {
			Fail, Block bool
			Timer       *float64
			At          *time.Time
		}
		_ = json.Unmarshal(req.Args, &args)
		if args.Block {
			g.started <- struct{}{}
			<-g.release
		}
		if args.Fail {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		resp := process.Response{}
		switch req.Task {
		case process.TaskInit:
			st.N = 0
		case process.TaskCall:
			st.N++
		case process.TaskTimeout:
			st.N += 100
		}
		if args.Timer != nil || args.At != nil {
			resp.Action = &process.Action{Timeout: args.Timer, SetTimer: args.At}
		}
		resp.AuxState, _ = json.Marshal(st)
		resp.Response, _ = json.Marshal(st.N)
		resp.Events = []json.RawMessage{json.RawMessage(`"` + string(req.Task) + `"`)}
		_ = json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// gate lets a test hold a call of the counter processor.
type gate struct{ started, release chan struct{} }

func setup(t *testing.T, driver string) (store.Store, *process.Runner) {
	t.Helper()
	return setupGate(t, driver, nil)
}

func setupGate(t *testing.T, driver string, g *gate) (store.Store, *process.Runner) {
	t.Helper()
	ctx := context.Background()
	st := openStore(t, driver)
	e, err := engine.New(engine.Config{
		Store:  st,
		Queues: []engine.QueueConfig{{Queue: process.DefaultQueue, Concurrency: 8}},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := counter(t, g)
	r, err := process.New(st, e, "", []process.Namespace{{Name: "c", Processor: &process.HTTPProcessor{URL: srv.URL}}})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })
	return st, r
}

// wait waits until a task job is final, checking it after each write to
// the (watched) store, and returns it.
func wait(t *testing.T, st store.Store, id uuid.UUID) *job.Job {
	t.Helper()
	var j *job.Job
	storewatch.Until(t, st, fmt.Sprintf("job %s to be final", id), func() bool {
		var err error
		if j, err = st.JobGet(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		return j.State.Final()
	})
	return j
}

func run(t *testing.T, st store.Store, r *process.Runner, task process.Task, args string) *job.Job {
	t.Helper()
	j, err := r.Submit(context.Background(), "c", "p", task, json.RawMessage(args), "")
	if err != nil {
		t.Fatal(err)
	}
	return wait(t, st, j.ID)
}

func TestCounterOneAtATime(t *testing.T) {
	eachStore(t, func(t *testing.T, driver string) {
		st, r := setup(t, driver)
		if j := run(t, st, r, process.TaskInit, `{}`); j.State != job.StateSucceeded {
			t.Fatalf("init: %s %s", j.State, j.LastError)
		}
		const calls = 200
		var wg sync.WaitGroup
		ids := make(chan uuid.UUID, calls)
		for range calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				j, err := r.Submit(context.Background(), "c", "p", process.TaskCall, nil, "")
				if err != nil {
					t.Error(err)
					return
				}
				ids <- j.ID
			}()
		}
		wg.Wait()
		close(ids)
		for id := range ids {
			if j := wait(t, st, id); j.State != job.StateSucceeded {
				t.Fatalf("call %s: %s %s", id, j.State, j.LastError)
			}
		}
		p, err := st.ProcessGet(context.Background(), "c", "p", store.HistoryPage{After: -1, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if !jsonEq(p.AuxState, `{"N":200}`) || p.LastEventID != calls+1 {
			t.Fatalf("lost updates: aux %s, %d events", p.AuxState, p.LastEventID)
		}
	})
}

func TestFailureRepair(t *testing.T) {
	eachStore(t, func(t *testing.T, driver string) {
		st, r := setup(t, driver)
		run(t, st, r, process.TaskInit, `{}`)
		if j := run(t, st, r, process.TaskCall, `{"fail":true}`); j.State != job.StateFailed {
			t.Fatalf("failing call: %s", j.State)
		}
		p, _ := st.ProcessGet(context.Background(), "c", "p", store.HistoryPage{})
		if p.Status != store.ProcessError || p.Detail == "" {
			t.Fatalf("after failure: %+v", p)
		}
		if j := run(t, st, r, process.TaskCall, `{}`); j.State != job.StateFailed {
			t.Fatalf("call in error: %s", j.State)
		}
		if j := run(t, st, r, process.TaskRepair, `{}`); j.State != job.StateSucceeded {
			t.Fatalf("repair: %s %s", j.State, j.LastError)
		}
		if j := run(t, st, r, process.TaskCall, `{}`); j.State != job.StateSucceeded || !jsonEq(j.Result, `{"response":1}`) {
			t.Fatalf("call after repair: %s %s %s", j.State, j.Result, j.LastError)
		}
		if j := run(t, st, r, process.TaskInit, `{}`); j.State != job.StateFailed {
			t.Fatalf("second init: %s", j.State)
		}
	})
}

func TestTimerFires(t *testing.T) {
	eachStore(t, func(t *testing.T, driver string) {
		st, r := setup(t, driver)
		run(t, st, r, process.TaskInit, `{}`)
		run(t, st, r, process.TaskCall, `{"timer":0.05}`)
		p, _ := st.ProcessGet(context.Background(), "c", "p", store.HistoryPage{})
		if p.TimerJob == uuid.Nil {
			t.Fatalf("no timer: %+v", p)
		}
		if j := wait(t, st, p.TimerJob); j.State != job.StateSucceeded {
			t.Fatalf("timer: %s %s", j.State, j.LastError)
		}
		p, _ = st.ProcessGet(context.Background(), "c", "p", store.HistoryPage{})
		if !jsonEq(p.AuxState, `{"N":101}`) || p.TimerJob != uuid.Nil {
			t.Fatalf("after timer: %s", p.AuxState)
		}
	})
}
