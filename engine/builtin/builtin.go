// Package builtin holds the job kinds every jobd node can run: noop and
// sleep, for smoke tests, demos and benchmarks.
package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/job"
)

// Kind names of the built-in handlers.
const (
	KindNoop  = "noop"
	KindSleep = "sleep"
)

// maxSteps bounds SleepArgs.Steps.
const maxSteps = 100000

// Register adds the built-in kinds to e.
func Register(e *engine.Engine) {
	engine.Register(e, KindNoop, Noop)
	engine.Register(e, KindSleep, Sleep)
}

// Noop succeeds at once and returns its args.
func Noop(_ context.Context, j *engine.Job[json.RawMessage]) (json.RawMessage, error) {
	if len(j.Args) == 0 {
		return json.RawMessage(`{}`), nil
	}
	return j.Args, nil
}

// SleepArgs are the args of the sleep kind.
type SleepArgs struct {
	// MS is how long the job sleeps, in milliseconds.
	MS int64 `json:"ms"`
	// Steps splits the sleep; progress is reported after each step.
	// Default 1.
	Steps int `json:"steps"`
	// FailAttempts makes the first FailAttempts attempts fail after
	// their sleep, on purpose.
	FailAttempts int `json:"fail_attempts"`
	// Result is returned as the job's result (null when absent).
	Result json.RawMessage `json:"result"`
}

// PhaseSleeping is the progress phase of a sleep job.
const PhaseSleeping = "sleeping"

// Sleep sleeps MS milliseconds in Steps steps, reporting progress
// step/Steps in phase "sleeping" (0/Steps at the start), fails its first
// FailAttempts attempts, and returns Result. It stops at once when its
// context is cancelled, returning the cancel's cause.
func Sleep(ctx context.Context, j *engine.Job[SleepArgs]) (json.RawMessage, error) {
	a := j.Args
	if a.MS < 0 || a.MS > math.MaxInt64/int64(time.Millisecond) {
		return nil, engine.Permanent(errors.New("sleep: ms is out of range"))
	}
	steps := a.Steps
	if steps == 0 {
		steps = 1
	}
	if steps < 0 || steps > maxSteps {
		return nil, engine.Permanent(fmt.Errorf("sleep: steps must be between 1 and %d, got %d", maxSteps, a.Steps))
	}
	total := time.Duration(a.MS) * time.Millisecond
	start := time.Now()
	j.SetProgress(job.Progress{Phase: PhaseSleeping, Done: 0, Total: int64(steps)})
	var t *time.Timer
	for i := 1; i <= steps; i++ {
		// Step i ends at i/steps of the total from the start, so rounding
		// never adds up (written so that it cannot overflow).
		n, k := time.Duration(i), time.Duration(steps)
		d := time.Until(start.Add(total/k*n + total%k*n/k))
		if t == nil {
			t = time.NewTimer(d)
			defer t.Stop()
		} else {
			t.Reset(d)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("sleep: stopped at step %d of %d: %w", i, steps, context.Cause(ctx))
		case <-t.C:
		}
		j.SetProgress(job.Progress{Phase: PhaseSleeping, Done: int64(i), Total: int64(steps)})
	}
	if j.Job != nil && j.Attempt <= a.FailAttempts {
		return nil, fmt.Errorf("sleep: failing attempt %d of %d on purpose", j.Attempt, a.FailAttempts)
	}
	if len(a.Result) == 0 {
		return json.RawMessage("null"), nil
	}
	return a.Result, nil
}
