package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/process"
	"github.com/jobd/jobd/store"
)

// counterProcessor is a real HTTP processor: aux_state {"n": N}; init
// sets 0, a call adds 1 and answers N. Args {"fail": true} answer 500,
// {"remove": true} removes the process, {"block": true} waits for release.
func counterProcessor(t *testing.T, release <-chan struct{}) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req process.Request
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var st struct {
			N int `json:"n"`
		}
		_ = json.Unmarshal(req.Process.AuxState, &st)
		var args struct{ Fail, Remove, Block bool }
		_ = json.Unmarshal(req.Args, &args)
		if args.Block {
			<-release
		}
		if args.Fail {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		if req.Task == process.TaskCall {
			st.N++
		}
		resp := process.Response{Events: []json.RawMessage{json.RawMessage(`"` + string(req.Task) + `"`)}}
		resp.AuxState, _ = json.Marshal(st)
		resp.Response, _ = json.Marshal(st.N)
		if args.Remove {
			resp.Action = &process.Action{Remove: true}
		}
		_ = json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// processServer is the API with a namespace "c" of counterProcessor run
// by a real engine.
func processServer(t *testing.T, st store.Store, release <-chan struct{}) *testServer {
	t.Helper()
	e, err := engine.New(engine.Config{
		Store:  st,
		Queues: []engine.QueueConfig{{Queue: process.DefaultQueue, Concurrency: 4}},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	proc := counterProcessor(t, release)
	r, err := process.New(st, e, "", []process.Namespace{{Name: "c", Processor: &process.HTTPProcessor{URL: proc.URL}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	// Registered after the HTTP server's cleanup, so it runs first: the
	// engine stops before the processor and the API close.
	srv := newServer(t, st, httpapi.Config{Processes: r})
	t.Cleanup(func() { cancel(); <-done })
	return srv
}

type taskAnswer struct {
	TaskID   string          `json:"task_id"`
	Response json.RawMessage `json:"response"`
	Process  *struct {
		Status   string          `json:"status"`
		Detail   string          `json:"detail"`
		AuxState json.RawMessage `json:"aux_state"`
		History  []struct {
			EventID int64           `json:"event_id"`
			Payload json.RawMessage `json:"payload"`
		} `json:"history"`
	} `json:"process"`
}

func TestProcessLifecycleHTTP(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		srv := processServer(t, st, nil)
		var a taskAnswer
		srv.do("POST", "/api/v1/processes/c/p", `{"args":{}}`).must(t, 201, &a)
		if a.Process == nil || a.Process.Status != "running" || string(a.Response) != "0" {
			t.Fatalf("init: %s", mustJSON(a))
		}
		srv.do("POST", "/api/v1/processes/c/p", "").problem(t, 409, "")
		srv.do("POST", "/api/v1/processes/nope/p", "").problem(t, 404, "ns")
		srv.do("POST", "/api/v1/processes/c/missing/call", "").problem(t, 404, "")

		// Concurrent calls run one at a time: every answer is distinct.
		const calls = 20
		seen := make(chan int, calls)
		var wg sync.WaitGroup
		for range calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := http.Post(srv.URL+"/api/v1/processes/c/p/call", "application/json", strings.NewReader(`{"args":{}}`))
				if err != nil {
					t.Error(err)
					return
				}
				defer resp.Body.Close()
				var ans taskAnswer
				if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil || resp.StatusCode != 200 {
					t.Errorf("call: %d %v", resp.StatusCode, err)
					return
				}
				var n int
				_ = json.Unmarshal(ans.Response, &n)
				seen <- n
			}()
		}
		wg.Wait()
		close(seen)
		got := map[int]bool{}
		for n := range seen {
			got[n] = true
		}
		if len(got) != calls {
			t.Fatalf("%d distinct answers of %d calls: lost updates", len(got), calls)
		}

		// History paging: event 1 is init, then one per call.
		var p struct {
			Status  string `json:"status"`
			History []struct {
				EventID int64 `json:"event_id"`
			} `json:"history"`
		}
		srv.do("GET", "/api/v1/processes/c/p?history_after=1&history_limit=2", "").must(t, 200, &p)
		if len(p.History) != 2 || p.History[0].EventID != 2 || p.History[1].EventID != 3 {
			t.Fatalf("history page: %+v", p.History)
		}
		srv.do("GET", "/api/v1/processes/c/p?history_limit=1", "").must(t, 200, &p)
		if len(p.History) != 1 || p.History[0].EventID != calls+1 {
			t.Fatalf("last event: %+v", p.History)
		}

		// Idempotency-Key: a retry returns the first outcome.
		var first, again taskAnswer
		srv.do("POST", "/api/v1/processes/c/p/call", "", "Idempotency-Key: k1").must(t, 200, &first)
		srv.do("POST", "/api/v1/processes/c/p/call", "", "Idempotency-Key: k1").must(t, 200, &again)
		if first.TaskID != again.TaskID || string(first.Response) != string(again.Response) {
			t.Fatalf("idempotent retry: %s then %s", mustJSON(first), mustJSON(again))
		}

		// Failure → error → calls refused → repair → running.
		srv.do("POST", "/api/v1/processes/c/p/repair", "").problem(t, 409, "")
		srv.do("POST", "/api/v1/processes/c/p/call", `{"args":{"fail":true}}`).problem(t, 502, "")
		srv.do("POST", "/api/v1/processes/c/p/call", "").problem(t, 409, "")
		var list struct {
			Processes []struct {
				ID     string `json:"id"`
				Detail string `json:"detail"`
			} `json:"processes"`
		}
		r := srv.do("GET", "/api/v1/processes/c?status=error", "").must(t, 200, &list)
		if r.header.Get("X-Total-Count") != "1" || len(list.Processes) != 1 || list.Processes[0].Detail == "" {
			t.Fatalf("errors: %s %s", r.header.Get("X-Total-Count"), r.body)
		}
		srv.do("POST", "/api/v1/processes/c/p/repair", "").must(t, 200, &a)
		if a.Process.Status != "running" {
			t.Fatalf("after repair: %s", mustJSON(a))
		}
		srv.do("POST", "/api/v1/processes/c/p/call", "").must(t, 200, nil)

		// Remove by DELETE, and by action.
		srv.do("DELETE", "/api/v1/processes/c/p", "").must(t, 204, nil)
		srv.do("GET", "/api/v1/processes/c/p", "").problem(t, 404, "")
		srv.do("POST", "/api/v1/processes/c/q", "").must(t, 201, nil)
		srv.do("POST", "/api/v1/processes/c/q/call", `{"args":{"remove":true}}`).must(t, 200, &a)
		if a.Process != nil {
			t.Fatalf("removed by action, still there: %s", mustJSON(a))
		}
		srv.do("GET", "/api/v1/processes/c/q", "").problem(t, 404, "")
		r = srv.do("GET", "/api/v1/processes/c", "").must(t, 200, nil)
		if r.header.Get("X-Total-Count") != "0" {
			t.Fatalf("processes left: %s", r.body)
		}
	})
}

// TestProcessCallTimeoutHTTP: a call still running at ?timeout= is a 504
// with its task id; the task is not lost.
func TestProcessCallTimeoutHTTP(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		release := make(chan struct{})
		srv := processServer(t, st, release)
		srv.do("POST", "/api/v1/processes/c/p", "").must(t, 201, nil)
		var to struct {
			TaskID string `json:"task_id"`
			State  string `json:"state"`
		}
		r := srv.do("POST", "/api/v1/processes/c/p/call?timeout=20ms", `{"args":{"block":true}}`)
		if r.header.Get("Content-Type") != "application/problem+json" {
			t.Fatalf("504 content type: %s", r.header.Get("Content-Type"))
		}
		r.must(t, 504, &to)
		if to.TaskID == "" {
			t.Fatalf("504 without task id: %s", r.body)
		}
		close(release)
		var j struct {
			State  string          `json:"state"`
			Result json.RawMessage `json:"result"`
		}
		srv.do("GET", "/api/v1/jobs/"+to.TaskID+"?wait=30s", "").must(t, 200, &j)
		if j.State != "succeeded" {
			t.Fatalf("task after release: %+v", j)
		}
		srv.do("POST", "/api/v1/processes/c/p/call?timeout=bad", "").problem(t, 400, "timeout")
	})
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
