package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

type greetArgs struct {
	Name  string `json:"name"`
	Times int    `json:"times"`
}

type greetResult struct {
	Greeting string `json:"greeting"`
	Attempt  int    `json:"attempt"`
}

func TestJobSucceedsWithTypedArgsAndResult(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		e := newEngine(t, s, newLogs(t), engine.Config{Queues: queue(2)})
		engine.Register(e, "greet", func(ctx context.Context, j *engine.Job[greetArgs]) (greetResult, error) {
			return greetResult{Greeting: strings.Repeat("hello "+j.Args.Name+"! ", j.Args.Times), Attempt: j.Attempt}, nil
		})
		start(t, e)

		j := insert(t, s, job.InsertParams{Kind: "greet", Args: json.RawMessage(`{"name":"ada","times":2}`)})
		noop := insert(t, s, job.InsertParams{Kind: "noop", Args: json.RawMessage(`{"a": [1, 2]}`)})

		got := waitState(t, s, j.ID, job.StateSucceeded)
		var res greetResult
		if err := json.Unmarshal(got.Result, &res); err != nil {
			t.Fatalf("result %s: %v", got.Result, err)
		}
		if res != (greetResult{Greeting: "hello ada! hello ada! ", Attempt: 1}) || got.Attempt != 1 {
			t.Errorf("result %+v at attempt %d, want the greeting at attempt 1", res, got.Attempt)
		}
		if kinds := eventKinds(t, s, j.ID); !slices.Equal(kinds, []job.EventKind{job.EventQueued, job.EventClaimed, job.EventSucceeded}) {
			t.Errorf("journal %v", kinds)
		}
		got = waitState(t, s, noop.ID, job.StateSucceeded)
		if !jsonEqual(got.Result, `{"a":[1,2]}`) {
			t.Errorf("noop result %s, want its args", got.Result)
		}
	})
}

func TestRetryWithBackoffThenSuccess(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		e := newEngine(t, s, newLogs(t), engine.Config{Queues: queue(1)})
		start(t, e)
		j := insert(t, s, job.InsertParams{Kind: "sleep", Args: json.RawMessage(`{"ms":0,"fail_attempts":2,"result":"done"}`)})

		got := waitState(t, s, j.ID, job.StateSucceeded)
		if got.Attempt != 3 || !jsonEqual(got.Result, `"done"`) {
			t.Errorf("attempt %d, result %s; want 3, \"done\"", got.Attempt, got.Result)
		}
		want := []job.EventKind{job.EventQueued, job.EventClaimed, job.EventRetried, job.EventClaimed,
			job.EventRetried, job.EventClaimed, job.EventSucceeded}
		if kinds := eventKinds(t, s, j.ID); !slices.Equal(kinds, want) {
			t.Errorf("journal %v, want %v", kinds, want)
		}
		evs, _ := s.JobEvents(context.Background(), j.ID)
		if !strings.Contains(evs[2].Detail, "sleep: failing attempt 1 of 2 on purpose") {
			t.Errorf("retried event detail %q, want the handler's error", evs[2].Detail)
		}
	})
}

func TestFailures(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		e := newEngine(t, s, newLogs(t), engine.Config{Queues: queue(4)})
		engine.Register(e, "permanent", func(ctx context.Context, j *engine.Job[struct{}]) (any, error) {
			return nil, engine.Permanent(errors.New("bad input"))
		})
		engine.Register(e, "panics", func(ctx context.Context, j *engine.Job[struct{}]) (any, error) {
			panic("boom")
		})
		engine.Register(e, "later", func(ctx context.Context, j *engine.Job[struct{}]) (any, error) {
			return nil, engine.RetryAfter(errors.New("upstream busy"), time.Hour)
		})
		engine.Register(e, "typed", func(ctx context.Context, j *engine.Job[greetArgs]) (any, error) {
			return nil, nil
		})
		start(t, e)

		perm := insert(t, s, job.InsertParams{Kind: "permanent"})
		got := waitState(t, s, perm.ID, job.StateFailed)
		if got.Attempt != 1 || got.LastError != "bad input" {
			t.Errorf("permanent: attempt %d, error %q; want 1, \"bad input\"", got.Attempt, got.LastError)
		}

		unknown := insert(t, s, job.InsertParams{Kind: "nobody-handles-this"})
		got = waitState(t, s, unknown.ID, job.StateFailed)
		if got.Attempt != 1 || !strings.Contains(got.LastError, `no handler for kind "nobody-handles-this"`) {
			t.Errorf("unknown kind: attempt %d, error %q", got.Attempt, got.LastError)
		}

		badArgs := insert(t, s, job.InsertParams{Kind: "typed", Args: json.RawMessage(`{"times":"two"}`)})
		got = waitState(t, s, badArgs.ID, job.StateFailed)
		if got.Attempt != 1 || !strings.Contains(got.LastError, "decode args") {
			t.Errorf("bad args: attempt %d, error %q", got.Attempt, got.LastError)
		}

		panics := insert(t, s, job.InsertParams{Kind: "panics", MaxAttempts: 2})
		got = waitState(t, s, panics.ID, job.StateFailed)
		if got.Attempt != 2 || got.LastError != "panic: boom" {
			t.Errorf("panic: attempt %d, error %q; want a retry then \"panic: boom\"", got.Attempt, got.LastError)
		}

		before := time.Now()
		later := insert(t, s, job.InsertParams{Kind: "later"})
		got = waitJob(t, s, later.ID, "queued again after attempt 1", func(j *job.Job) bool {
			return j.State == job.StateQueued && j.Attempt == 1
		})
		if got.RunAt.Before(before.Add(50*time.Minute)) || got.LastError != "upstream busy" {
			t.Errorf("RetryAfter: run_at %s (inserted %s), error %q; want an hour later", got.RunAt, before, got.LastError)
		}
	})
}

func TestRunTwice(t *testing.T) {
	t.Parallel()
	s := openStore(t, "sqlite")
	e := newEngine(t, s, newLogs(t), engine.Config{Queues: queue(1)})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.Run(ctx); err != nil {
		t.Errorf("Run: %v", err)
	}
	if err := e.Run(ctx); err == nil {
		t.Error("a second Run returned nil, want an error")
	}
}

// jsonEqual reports whether raw holds the same JSON value as want.
func jsonEqual(raw json.RawMessage, want string) bool {
	var a, b any
	if json.Unmarshal(raw, &a) != nil || json.Unmarshal([]byte(want), &b) != nil {
		return false
	}
	return reflect.DeepEqual(a, b)
}

// TestNoResult: a handler of result type NoResult leaves its job's result
// absent (nil), not {} nor null.
func TestNoResult(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		e := newEngine(t, s, newLogs(t), engine.Config{Queues: queue(1)})
		engine.Register(e, "ping", func(ctx context.Context, j *engine.Job[json.RawMessage]) (engine.NoResult, error) {
			return engine.NoResult{}, nil
		})
		start(t, e)
		j := insert(t, s, job.InsertParams{Kind: "ping"})
		got := waitState(t, s, j.ID, job.StateSucceeded)
		if got.Result != nil {
			t.Errorf("result %q, want none", got.Result)
		}
	})
}

// TestEngineLeaseTTL: the engine's LeaseTTL is the lease of the jobs it
// inserts that set none; a job's own lease_ttl wins.
func TestEngineLeaseTTL(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		e := newEngine(t, s, newLogs(t), engine.Config{LeaseTTL: 7 * time.Second})
		ctx := context.Background()
		res, err := e.InsertMany(ctx, []job.InsertParams{{Kind: "a"}, {Kind: "b", LeaseTTL: 3 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range []time.Duration{7 * time.Second, 3 * time.Second} {
			if got := res[i].Job.LeaseTTL; got != want {
				t.Errorf("job %d: lease %s, want %s", i, got, want)
			}
		}
		if _, err := engine.New(engine.Config{Store: s, LeaseTTL: time.Millisecond}); err == nil {
			t.Error("a LeaseTTL under 1s was accepted")
		}
	})
}
