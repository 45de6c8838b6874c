package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

func TestCancelRunningJob(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		e := newEngine(t, s, newLogs(t), engine.Config{Queues: queue(1), HeartbeatInterval: 100 * time.Millisecond})
		start(t, e)
		j := insert(t, s, job.InsertParams{Kind: "sleep", Args: json.RawMessage(`{"ms":600000,"steps":600}`)})
		waitState(t, s, j.ID, job.StateRunning)

		if _, err := s.JobCancel(context.Background(), j.ID); err != nil {
			t.Fatalf("JobCancel: %v", err)
		}
		got := waitState(t, s, j.ID, job.StateCanceled)
		if got.Attempt != 1 {
			t.Errorf("attempt %d, want 1", got.Attempt)
		}
		want := []job.EventKind{job.EventQueued, job.EventClaimed, job.EventCancelRequested, job.EventCanceled}
		if kinds := eventKinds(t, s, j.ID); !slices.Equal(kinds, want) {
			t.Errorf("journal %v, want %v", kinds, want)
		}
	})
}

func TestProgress(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		// A throttle of an hour: any write but the first and the phase
		// changes would wait for it.
		e := newEngine(t, s, newLogs(t), engine.Config{Queues: queue(1), ProgressInterval: time.Hour})
		step := make(chan struct{})
		engine.Register(e, "steps", func(ctx context.Context, j *engine.Job[struct{}]) (any, error) {
			j.SetProgress(job.Progress{Phase: "download", Done: 1, Total: 4})
			<-step
			j.SetProgress(job.Progress{Phase: "download", Done: 2, Total: 4})
			j.SetProgress(job.Progress{Phase: "convert", Done: 3, Total: 4, Items: json.RawMessage(`{"a.mp4":"done"}`)})
			<-step
			j.SetProgress(job.Progress{Phase: "convert", Done: 4, Total: 4})
			return nil, nil
		})
		start(t, e)
		j := insert(t, s, job.InsertParams{Kind: "steps"})

		at := func(phase string, done int64) func(*job.Job) bool {
			return func(j *job.Job) bool { return j.Progress.Phase == phase && j.Progress.Done == done }
		}
		got := waitJob(t, s, j.ID, "progress download 1/4", at("download", 1))
		if got.State != job.StateRunning || got.Progress.Total != 4 {
			t.Errorf("state %s, progress %+v", got.State, got.Progress)
		}
		step <- struct{}{}
		got = waitJob(t, s, j.ID, "progress convert 3/4 (a phase change is written at once)", at("convert", 3))
		if !jsonEqual(got.Progress.Items, `{"a.mp4":"done"}`) {
			t.Errorf("items %s", got.Progress.Items)
		}
		step <- struct{}{}
		got = waitState(t, s, j.ID, job.StateSucceeded)
		if got.Progress.Phase != "convert" || got.Progress.Done != 4 {
			t.Errorf("final progress %+v, want convert 4/4 flushed before the outcome", got.Progress)
		}
	})
}

type resumeState struct {
	Done int `json:"done"`
}

func TestCheckpointCarriedToNextAttempt(t *testing.T) {
	eachStore(t, func(t *testing.T, s store.Store) {
		e := newEngine(t, s, newLogs(t), engine.Config{Queues: queue(1)})
		engine.Register(e, "resumable", func(ctx context.Context, j *engine.Job[struct{}]) (resumeState, error) {
			var cp resumeState
			if err := j.Checkpoint(&cp); err != nil {
				return cp, err
			}
			if j.Attempt == 1 {
				if cp != (resumeState{}) {
					return cp, engine.Permanent(errors.New("a checkpoint on the first attempt"))
				}
				if err := j.SaveCheckpoint(ctx, resumeState{Done: 3}); err != nil {
					return cp, err
				}
				return cp, errors.New("crashed after item 3")
			}
			return cp, nil
		})
		start(t, e)
		j := insert(t, s, job.InsertParams{Kind: "resumable"})
		got := waitState(t, s, j.ID, job.StateSucceeded)
		if got.Attempt != 2 || !jsonEqual(got.Result, `{"done":3}`) {
			t.Errorf("attempt %d, result %s; want 2, the checkpoint of attempt 1", got.Attempt, got.Result)
		}
	})
}
