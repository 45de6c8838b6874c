package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/client"
	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/process"
	"github.com/jobd/jobd/store"
)

// serveProcesses serves the API over st with a real engine running the
// namespace "c", whose processor is counter, except that args
// {"fail": true} fail it and {"block": true} wait for release.
func serveProcesses(t *testing.T, st store.Store, release <-chan struct{}) *client.Client {
	t.Helper()
	e, err := engine.New(engine.Config{
		Store: st, Logger: slog.New(slog.DiscardHandler),
		Queues: []engine.QueueConfig{{Queue: process.DefaultQueue, Concurrency: 4}},
	})
	if err != nil {
		t.Fatal(err)
	}
	proc := func(ctx context.Context, req *process.Request) (*process.Response, error) {
		var args struct{ Fail, Block bool }
		_ = json.Unmarshal(req.Args, &args)
		if args.Block {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if args.Fail {
			return nil, errors.New("the processor broke")
		}
		return counter(ctx, req)
	}
	r, err := process.New(st, e, "", []process.Namespace{{Name: "c", Processor: process.ProcessorFunc(proc)}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	c, _ := serve(t, st, httpapi.Config{Processes: r}, "", nil)
	t.Cleanup(func() { cancel(); <-done }) // runs before the server closes
	return c
}

func TestProcesses(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		ctx := t.Context()
		c := serveProcesses(t, st, nil)
		const id = "a/b c%" // one path segment, escaped
		ans, err := c.InitProcess(ctx, "c", id, nil, client.TaskOptions{})
		if err != nil || string(ans.Response) != `{"n":0}` || ans.Process == nil || ans.Process.ID != id || ans.Process.Status != api.ProcessRunning {
			t.Fatalf("init: %+v, %v", ans, err)
		}
		_, err = c.InitProcess(ctx, "c", id, nil, client.TaskOptions{})
		var apiErr *client.Error
		if !errors.Is(err, client.ErrConflict) || !errors.As(err, &apiErr) || apiErr.Problem.Type != api.ProblemWrongState {
			t.Errorf("init twice: %v", err)
		}
		if _, err := c.CallProcess(ctx, "nope", id, nil, client.TaskOptions{}); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("call in an unknown namespace: %v", err)
		}
		if _, err := c.CallProcess(ctx, "c", "missing", nil, client.TaskOptions{}); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("call of no process: %v", err)
		}

		key := client.TaskOptions{IdempotencyKey: "k1", Timeout: time.Minute}
		first, err := c.CallProcess(ctx, "c", id, json.RawMessage(`{"by":2}`), key)
		if err != nil || string(first.Response) != `{"n":2}` {
			t.Fatalf("call: %+v, %v", first, err)
		}
		again, err := c.CallProcess(ctx, "c", id, json.RawMessage(`{"by":2}`), key)
		if err != nil || again.TaskID != first.TaskID || string(again.Response) != `{"n":2}` {
			t.Fatalf("call again with the key: %+v, %v", again, err)
		}
		for range 3 {
			if _, err := c.CallProcess(ctx, "c", id, json.RawMessage(`{"by":1}`), client.TaskOptions{}); err != nil {
				t.Fatal(err)
			}
		}

		// History: init, then one event per call run (4), oldest first.
		p, err := c.GetProcess(ctx, "c", id, client.HistoryOptions{})
		if err != nil || len(p.History) != 5 || p.LastEventID != 5 || string(p.AuxState) != `{"n":5}` {
			t.Fatalf("get: %+v, %v", p, err)
		}
		after := int64(1)
		p, err = c.GetProcess(ctx, "c", id, client.HistoryOptions{After: &after, Limit: 2})
		if err != nil || len(p.History) != 2 || p.History[0].EventID != 2 || p.History[1].EventID != 3 {
			t.Fatalf("history page: %+v, %v", p.History, err)
		}
		p, err = c.GetProcess(ctx, "c", id, client.HistoryOptions{Limit: 1})
		if err != nil || len(p.History) != 1 || p.History[0].EventID != 5 {
			t.Fatalf("last event: %+v, %v", p.History, err)
		}
		p, err = c.GetProcess(ctx, "c", id, client.HistoryOptions{Limit: -1})
		if err != nil || len(p.History) != 0 {
			t.Fatalf("no history: %+v, %v", p.History, err)
		}

		// A failed processor is an upstream failure, not a transient one.
		_, err = c.CallProcess(ctx, "c", id, json.RawMessage(`{"fail":true}`), client.TaskOptions{})
		if !errors.Is(err, client.ErrUpstream) || errors.Is(err, client.ErrUnavailable) || client.IsRetryable(err) ||
			!errors.As(err, &apiErr) || apiErr.StatusCode != 502 || apiErr.Problem.Type != api.ProblemProcessorFailed {
			t.Fatalf("failed processor: %v", err)
		}
		if _, err := c.CallProcess(ctx, "c", id, nil, client.TaskOptions{}); !errors.Is(err, client.ErrConflict) {
			t.Errorf("call in error: %v", err)
		}
		for _, other := range []string{"x1", "x2", "x3"} {
			if _, err := c.InitProcess(ctx, "c", other, nil, client.TaskOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		list, err := c.ListProcesses(ctx, "c", client.ProcessListOptions{Status: api.ProcessError})
		if err != nil || list.Total != 1 || len(list.Processes) != 1 || list.Processes[0].ID != id || list.Processes[0].Detail == "" {
			t.Fatalf("errors: %+v, %v", list, err)
		}
		list, err = c.ListProcesses(ctx, "c", client.ProcessListOptions{Limit: 3})
		if err != nil || list.Total != 4 || len(list.Processes) != 3 || list.Next == "" {
			t.Fatalf("first page: %+v, %v", list, err)
		}
		list, err = c.ListProcesses(ctx, "c", client.ProcessListOptions{Limit: 3, After: list.Next})
		if err != nil || len(list.Processes) != 1 || list.Next != "" {
			t.Fatalf("second page: %+v, %v", list, err)
		}

		if _, err := c.RepairProcess(ctx, "c", "x1", nil, client.TaskOptions{}); !errors.Is(err, client.ErrConflict) {
			t.Errorf("repair of a running process: %v", err)
		}
		ans, err = c.RepairProcess(ctx, "c", id, nil, client.TaskOptions{})
		if err != nil || ans.Process.Status != api.ProcessRunning {
			t.Fatalf("repair: %+v, %v", ans, err)
		}
		if err := c.DeleteProcess(ctx, "c", id); err != nil {
			t.Fatal(err)
		}
		if _, err := c.GetProcess(ctx, "c", id, client.HistoryOptions{}); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("get after delete: %v", err)
		}
	})
}

// TestProcessTaskTimeout: a task still running at the timeout is a
// *TaskTimeoutError naming it; it is not lost.
func TestProcessTaskTimeout(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		ctx := t.Context()
		release := make(chan struct{})
		c := serveProcesses(t, st, release)
		if _, err := c.InitProcess(ctx, "c", "p", nil, client.TaskOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := c.CallProcess(ctx, "c", "p", json.RawMessage(`{"block":true}`), client.TaskOptions{Timeout: 20 * time.Millisecond})
		var pending *client.TaskTimeoutError
		var apiErr *client.Error
		if !errors.As(err, &pending) || pending.TaskID == [16]byte{} || pending.State.Final() ||
			!errors.Is(err, client.ErrTaskTimeout) || errors.Is(err, client.ErrUnavailable) || client.IsRetryable(err) ||
			!errors.As(err, &apiErr) || apiErr.StatusCode != 504 {
			t.Fatalf("blocked call: %v", err)
		}
		close(release)
		j, err := c.Wait(ctx, pending.TaskID, nil)
		if err != nil || j.State != api.StateSucceeded {
			t.Fatalf("the task after release: %+v, %v", j, err)
		}
	})
}
