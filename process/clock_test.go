package process_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/process"
)

// TestTimeoutReadsClock: a relative timer ("timeout": seconds) is due at
// the runner's clock plus the delay, not at the wall clock's.
func TestTimeoutReadsClock(t *testing.T) {
	eachStore(t, func(t *testing.T, driver string) {
		st := openStore(t, driver)
		e, err := engine.New(engine.Config{
			Store:  st,
			Queues: []engine.QueueConfig{{Queue: process.DefaultQueue, Concurrency: 2}},
			Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			t.Fatal(err)
		}
		// Far in the future: the timer must not fire during the test.
		fake := clock.NewFake(time.Date(2100, 1, 2, 3, 4, 5, 0, time.UTC))
		r, err := process.New(st, e, "", []process.Namespace{{Name: "c", Processor: &process.HTTPProcessor{URL: counter(t, nil).URL}}},
			process.WithClock(fake))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })

		if j := run(t, st, r, process.TaskInit, `{}`); j.State != job.StateSucceeded {
			t.Fatalf("init %s: %s", j.State, j.LastError)
		}
		if j := run(t, st, r, process.TaskCall, `{"timer": 60}`); j.State != job.StateSucceeded {
			t.Fatalf("call %s: %s", j.State, j.LastError)
		}
		p := get(t, st)
		want := fake.Now().Add(time.Minute)
		if p.TimerAt == nil || !p.TimerAt.Equal(want) {
			t.Fatalf("timer at %v, want %v", p.TimerAt, want)
		}
		tj, err := st.JobGet(context.Background(), p.TimerJob)
		if err != nil {
			t.Fatal(err)
		}
		if !tj.RunAt.Equal(want) || tj.State.Final() {
			t.Errorf("timer job run_at %v state %s, want %v and pending", tj.RunAt, tj.State, want)
		}
	})
}
