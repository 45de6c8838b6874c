package builtin_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/engine/builtin"
	"github.com/jobd/jobd/job"
)

// The handlers are plain functions: a hand-built engine.Job runs them
// without an engine or a store (the engine tests run them for real).

func TestNoopReturnsItsArgs(t *testing.T) {
	t.Parallel()
	got, err := builtin.Noop(context.Background(), &engine.Job[json.RawMessage]{Job: &job.Job{}, Args: json.RawMessage(`{"a":1}`)})
	if err != nil || string(got) != `{"a":1}` {
		t.Errorf("Noop = %s, %v; want its args", got, err)
	}
	got, err = builtin.Noop(context.Background(), &engine.Job[json.RawMessage]{Job: &job.Job{}})
	if err != nil || string(got) != `{}` {
		t.Errorf("Noop without args = %s, %v; want {}", got, err)
	}
}

func sleepJob(attempt int, args string) *engine.Job[builtin.SleepArgs] {
	j := &engine.Job[builtin.SleepArgs]{Job: &job.Job{Attempt: attempt}}
	if err := json.Unmarshal([]byte(args), &j.Args); err != nil {
		panic(err)
	}
	return j
}

func TestSleep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	got, err := builtin.Sleep(ctx, sleepJob(1, `{"ms":5,"steps":5,"result":{"ok":true}}`))
	if err != nil || string(got) != `{"ok":true}` {
		t.Errorf("Sleep = %s, %v; want its result", got, err)
	}
	got, err = builtin.Sleep(ctx, sleepJob(1, `{}`))
	if err != nil || string(got) != `null` {
		t.Errorf("Sleep without result = %s, %v; want null", got, err)
	}
	_, err = builtin.Sleep(ctx, sleepJob(1, `{"fail_attempts":2}`))
	if err == nil || err.Error() != "sleep: failing attempt 1 of 2 on purpose" {
		t.Errorf("attempt 1 of fail_attempts 2: %v", err)
	}
	if _, err = builtin.Sleep(ctx, sleepJob(3, `{"fail_attempts":2}`)); err != nil {
		t.Errorf("attempt 3 of fail_attempts 2: %v, want success", err)
	}
	if _, err = builtin.Sleep(ctx, sleepJob(1, `{"steps":-1}`)); err == nil || !strings.Contains(err.Error(), "steps") {
		t.Errorf("steps -1: %v, want an error naming steps", err)
	}
}

func TestSleepStopsOnCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(engine.ErrCancelRequested)
	_, err := builtin.Sleep(ctx, sleepJob(1, `{"ms":3600000,"steps":2}`))
	if !errors.Is(err, engine.ErrCancelRequested) {
		t.Errorf("Sleep after cancel = %v, want the cancel's cause", err)
	}
}
