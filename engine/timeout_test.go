package engine_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/observe"
	"github.com/jobd/jobd/store"
)

// abandonCounter counts the handlers an engine abandoned.
type abandonCounter struct {
	observe.Nop
	abandoned, timedOut atomic.Int64
}

func (c *abandonCounter) Kind(string, string) observe.KindRecorder { return abandonRecorder{c} }
func (c *abandonCounter) TimedOut(n int)                           { c.timedOut.Add(int64(n)) }

type abandonRecorder struct{ c *abandonCounter }

func (abandonRecorder) Started(time.Duration)                   {}
func (abandonRecorder) Finished(observe.Outcome, time.Duration) {}
func (r abandonRecorder) Abandoned()                            { r.c.abandoned.Add(1) }

// TestHandlerIgnoringItsDeadline: an in-process handler that ignores its
// context runs past its job's deadline. The attempt ends "timed-out" at
// the deadline all the same, the retry runs on the same pool of one slot
// (the engine stopped counting the abandoned handler after its grace,
// and said so), and the stubborn handler's late success is dropped.
func TestHandlerIgnoringItsDeadline(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		obs := &abandonCounter{}
		release := make(chan struct{})
		defer close(release)
		logs := newLogs(t)
		e := newEngine(t, s, logs, engine.Config{Queues: queue(1), AbandonGrace: 200 * time.Millisecond,
			ReaperInterval: 100 * time.Millisecond, Observer: obs})
		abandoned := engine.AbandonedSignal(e)
		abandoned.Init()
		var attempts atomic.Int64
		engine.Register(e, "stubborn", func(ctx context.Context, j *engine.Job[struct{}]) (string, error) {
			attempts.Add(1)
			if j.Attempt == 1 {
				if d, ok := ctx.Deadline(); !ok || j.Deadline == nil || d.Before(j.Deadline.Add(-time.Second)) || d.After(j.Deadline.Add(time.Second)) {
					t.Errorf("the handler's deadline %v %v, want the job's %v", d, ok, j.Deadline)
				}
				<-release // ignores its context
				return "late", nil
			}
			return "second", nil
		})
		start(t, e)
		j := insert(t, s, job.InsertParams{Kind: "stubborn", Timeout: time.Second, MaxAttempts: 2})
		first := waitJob(t, s, j.ID, "running attempt 1", func(j *job.Job) bool { return j.State == job.StateRunning && j.Deadline != nil })
		if id := abandoned.Wait(t, "the stubborn handler to be abandoned"); id != j.ID {
			t.Fatalf("abandoned %s, want %s", id, j.ID)
		}
		final := waitState(t, s, j.ID, job.StateSucceeded)
		if final.Attempt != 2 || !jsonEqual(final.Result, `"second"`) {
			t.Fatalf("attempt %d result %s, want the retry's", final.Attempt, final.Result)
		}
		want := []job.EventKind{job.EventQueued, job.EventClaimed, job.EventTimedOut, job.EventClaimed, job.EventSucceeded}
		evs, err := s.JobEvents(context.Background(), j.ID)
		if err != nil {
			t.Fatal(err)
		}
		kinds := make([]job.EventKind, len(evs))
		for i, ev := range evs {
			kinds[i] = ev.Kind
		}
		if !slices.Equal(kinds, want) {
			t.Fatalf("journal %v, want %v", kinds, want)
		}
		if evs[2].At.Before(*first.Deadline) || evs[2].Detail != "timed out after 1s" {
			t.Fatalf("timed-out entry %+v, want at or after the deadline %v", evs[2], first.Deadline)
		}
		if obs.abandoned.Load() != 1 || obs.timedOut.Load() < 1 {
			t.Fatalf("recorded %d abandoned handlers and %d timed-out jobs, want 1 and 1", obs.abandoned.Load(), obs.timedOut.Load())
		}
		if logs.count("ignored its job's deadline") != 1 {
			t.Fatal("the abandoned handler was not logged")
		}
	})
}

// TestHandlerHonouringItsDeadline: a handler that returns when its
// context ends at the deadline (cause ErrTimedOut) frees its slot at
// once, and its failure is not written: the reaper ends the attempt
// "timed-out". The queue's default timeout bounds a job without one.
func TestHandlerHonouringItsDeadline(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		qs := queue(1)
		qs[0].Timeout = time.Second
		e := newEngine(t, s, newLogs(t), engine.Config{Queues: qs, ReaperInterval: 100 * time.Millisecond})
		timedOut := engine.TimedOutSignal(e)
		timedOut.Init()
		causes := make(chan error, 1)
		engine.Register(e, "polite", func(ctx context.Context, j *engine.Job[struct{}]) (string, error) {
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return "", ctx.Err()
		})
		start(t, e)
		j := insert(t, s, job.InsertParams{Kind: "polite", MaxAttempts: 1})
		if cause := <-causes; cause != engine.ErrTimedOut {
			t.Fatalf("the handler's context ended with %v, want ErrTimedOut", cause)
		}
		if id := timedOut.Wait(t, "the engine to leave the attempt to the reaper"); id != j.ID {
			t.Fatalf("timed out %s, want %s", id, j.ID)
		}
		final := waitState(t, s, j.ID, job.StateFailed)
		if final.LastError != job.TimedOut(0) || final.Timeout != 0 {
			t.Fatalf("last error %q timeout %s, want %q under the queue's default", final.LastError, final.Timeout, job.TimedOut(0))
		}
		if kinds := eventKinds(t, s, j.ID); !slices.Equal(kinds, []job.EventKind{job.EventQueued, job.EventClaimed, job.EventTimedOut}) {
			t.Fatalf("journal %v", kinds)
		}
	})
}

// TestQueueTimeoutParsed: --workers takes a queue's default timeout as
// a Go duration.
func TestQueueTimeoutParsed(t *testing.T) {
	qs, err := engine.ParseQueues([]byte(`[{"queue":"video","concurrency":2,"timeout":"10m"}]`))
	if err != nil || qs[0].Timeout != 10*time.Minute {
		t.Fatalf("ParseQueues: %+v %v", qs, err)
	}
	for _, bad := range []string{`[{"queue":"q","concurrency":1,"timeout":"soon"}]`, `[{"queue":"q","concurrency":1,"timeout":"10ms"}]`} {
		if _, err := engine.ParseQueues([]byte(bad)); err == nil {
			t.Errorf("ParseQueues(%s): no error", bad)
		}
	}
}
