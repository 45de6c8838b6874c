package client_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/engine/builtin"
	"github.com/jobd/jobd/internal/httpapi"
	"github.com/jobd/jobd/internal/remote"
	"github.com/jobd/jobd/process"
	"github.com/jobd/jobd/store/sqlite"
)

// exampleJobd is a real jobd for one example: the HTTP API and an engine
// over an SQLite store in a temporary directory, as `jobd serve` composes
// them, with the built-in kinds (noop, sleep) on queue "default" and a
// process namespace "counters" whose processor is counter. Queue "images"
// has no pool: remote workers take it.
type exampleJobd struct {
	URL  string
	stop func()
}

// Close stops the server and removes its database.
func (j *exampleJobd) Close() { j.stop() }

// startJobd starts an exampleJobd; it panics when it cannot, as an
// example has no *testing.T to fail.
func startJobd() *exampleJobd {
	dir, err := os.MkdirTemp("", "jobd-client-example-")
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "jobd.db"), sqlite.Options{})
	if err != nil {
		panic(err)
	}
	if err := st.Migrate(ctx); err != nil {
		panic(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	e, err := engine.New(engine.Config{
		Store: st, Logger: quiet, PollInterval: 50 * time.Millisecond,
		Queues: []engine.QueueConfig{{Queue: "default", Concurrency: 4}, {Queue: process.DefaultQueue, Concurrency: 4}},
	})
	if err != nil {
		panic(err)
	}
	builtin.Register(e)
	procs, err := process.New(st, e, "", []process.Namespace{{Name: "counters", Processor: process.ProcessorFunc(counter)}})
	if err != nil {
		panic(err)
	}
	workers, err := remote.New(remote.Config{Store: st, Policy: e, Logger: quiet})
	if err != nil {
		panic(err)
	}
	h, err := httpapi.New(httpapi.Config{
		Store: st, Logger: quiet, Processes: procs, Remote: workers, PollInterval: 10 * time.Millisecond,
	})
	if err != nil {
		panic(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx) }()
	srv := httptest.NewServer(h)
	return &exampleJobd{URL: srv.URL, stop: func() {
		srv.Close()
		cancel()
		<-done
		st.Close()
		os.RemoveAll(dir)
	}}
}

// counter is the processor of namespace "counters": aux state {"n": N};
// init sets 0, a call adds args.by; each task answers {"n": N} and
// records the event {"task": T, "n": N}.
func counter(_ context.Context, req *process.Request) (*process.Response, error) {
	var state struct {
		N int `json:"n"`
	}
	_ = json.Unmarshal(req.Process.AuxState, &state)
	if req.Task == process.TaskCall {
		var args struct {
			By int `json:"by"`
		}
		_ = json.Unmarshal(req.Args, &args)
		state.N += args.By
	}
	aux, _ := json.Marshal(state)
	event, _ := json.Marshal(struct {
		Task process.Task `json:"task"`
		N    int          `json:"n"`
	}{req.Task, state.N})
	return &process.Response{Events: []json.RawMessage{event}, AuxState: aux, Response: aux}, nil
}
