package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/observe"
	"github.com/jobd/jobd/step"
	"github.com/jobd/jobd/store"
)

// Durable execution in the engine (docs/steps-and-children.md): the
// execution of a claimed job is its handler's step.Recorder, carried by
// the handler's context; a handler that returns a wait (WaitForChildren,
// WaitForSignal, SleepUntil) ends its attempt waiting, and its pool slot
// is free at once.

// Step runs the step name of the job whose handler ctx is (step.Run):
// on a later attempt of the same job (a retry, a rescue after a crash) a
// step that succeeded returns its recorded result without running.
// What may go in a step: work idempotent up to the point it records.
func Step[T any](ctx context.Context, name string, fn func(ctx context.Context) (T, error)) (T, error) {
	return step.Run(ctx, name, fn)
}

// Spawn spawns children of the job whose handler ctx is, fenced by its
// lease, in one transaction (store.DurableStore.JobSpawn): idempotent
// per key, so a handler that runs again spawns nothing twice. Return
// WaitForChildren to end the attempt until they are all final; the claim
// that resumes the job carries them (j.Resume.Children, by key).
func Spawn(ctx context.Context, children ...job.ChildParams) ([]store.InsertResult, error) {
	x, ok := step.From(ctx).(*execution)
	if !ok {
		return nil, step.ErrNoHandler
	}
	res, err := x.e.store.JobSpawn(ctx, x.lease, store.SpawnParams{Children: children, MaxChildren: x.e.cfg.MaxChildren})
	if errors.Is(err, job.ErrLeaseLost) {
		x.leaseLost("spawn")
	}
	if err != nil {
		return nil, fmt.Errorf("spawn: %w", err)
	}
	return res, nil
}

// WaitForChildren is the error a handler returns (with any result,
// which is dropped) to end its attempt until every child it spawned is
// final. The job is then claimed again, under the same attempt, with
// j.Resume.Children.
func WaitForChildren(ctx context.Context) error { return inHandler(ctx, step.WaitForChildren()) }

// WaitForSignal is the error a handler returns to end its attempt until
// the signal name is sent to its job (Engine.Signal, POST
// /api/v1/jobs/{id}/signal), or timeout passes (0: no timeout). The job
// is then claimed again with j.Resume.Signal (TimedOut when the timeout
// came first). A signal sent before is kept, and ends the wait at once.
func WaitForSignal(ctx context.Context, name string, timeout time.Duration) error {
	return inHandler(ctx, step.WaitForSignal(name, timeout))
}

// SleepUntil is the error a handler returns to end its attempt until t.
func SleepUntil(ctx context.Context, t time.Time) error { return inHandler(ctx, step.SleepUntil(t)) }

// inHandler is wait, or step.ErrNoHandler outside a handler.
func inHandler(ctx context.Context, wait error) error {
	if step.From(ctx) == nil {
		return step.ErrNoHandler
	}
	return wait
}

// Signal sends the signal name, with payload, to job id
// (store.DurableStore.JobSignal): it wakes the job waiting for it, or
// is kept until the job waits for it.
func (e *Engine) Signal(ctx context.Context, id uuid.UUID, name string, payload json.RawMessage) (*store.SignalResult, error) {
	return e.store.JobSignal(ctx, id, name, payload)
}

// steps is what an execution recorded itself, beside what its claim
// carried (job.Resume.Steps).
type steps struct {
	mu       sync.Mutex
	recorded map[string]json.RawMessage
}

// Lookup returns the recorded result of the step name (step.Recorder).
func (x *execution) Lookup(name string) (json.RawMessage, bool) {
	x.steps.mu.Lock()
	raw, ok := x.steps.recorded[name]
	x.steps.mu.Unlock()
	if ok {
		return raw, true
	}
	if r := x.job.Resume; r != nil {
		if st, ok := r.Steps[name]; ok {
			return st.Result, true
		}
	}
	return nil, false
}

// Record records the step name, fenced by the lease (step.Recorder).
func (x *execution) Record(ctx context.Context, name string, result json.RawMessage, startedAt time.Time) error {
	res, err := x.e.store.JobStep(ctx, x.lease, store.StepParams{Name: name, Result: result, StartedAt: startedAt,
		MaxSteps: x.e.cfg.MaxSteps, MaxResult: x.e.cfg.MaxStepResultBytes})
	if errors.Is(err, job.ErrLeaseLost) {
		x.leaseLost("step")
	}
	if err != nil {
		return err
	}
	x.steps.mu.Lock()
	if x.steps.recorded == nil {
		x.steps.recorded = make(map[string]json.RawMessage)
	}
	x.steps.recorded[name] = res.Step.Result
	x.steps.mu.Unlock()
	return nil
}

// waitRequest is the store's form of a handler's wait.
func waitRequest(w *step.Wait) job.WaitRequest {
	return job.WaitRequest{For: job.WaitFor(w.For), Signal: w.Signal, Timeout: w.Timeout, Until: w.Until}
}

// endWaiting ends x's attempt waiting as w says (store JobWait), in
// place of an outcome: x leaves the running jobs, and its pool slot is
// free, once the store answered. A wait the store refuses (the lease
// lost; a bad wait, which fails the job) is logged.
func (e *Engine) endWaiting(ctx context.Context, x *execution, w *step.Wait, ran time.Duration) {
	e.mu.Lock()
	_, ok := e.running[x]
	if ok {
		e.untrackLocked(x)
	}
	e.mu.Unlock()
	if !ok {
		e.log.Warn("engine: job waited after the shutdown released it; its wait is dropped", "job_id", x.job.ID, "kind", x.job.Kind)
		return
	}
	defer func() {
		x.p.done()
		e.notifyEnded()
	}()
	req := waitRequest(w)
	_, err := e.store.JobWait(ctx, x.lease, req)
	var bad *job.ValidationError
	if errors.As(err, &bad) {
		// A wait no store applies fails the job for good, saying why.
		e.log.Warn("engine: the handler's wait is refused; failing the job", "job_id", x.job.ID, "kind", x.job.Kind, "err", err)
		out := store.Outcome{Lease: x.lease, Outcome: job.Outcome{Status: store.OutcomeFailed, Error: truncate(storableText("wait refused: "+err.Error()), maxErrorBytes)}}
		_, err = e.store.JobFinish(ctx, []store.Outcome{out})
	}
	switch {
	case err == nil:
		x.rec.Finished(observe.Released, ran)
		x.span.End(observe.Released, w.Error(), e.clock.Now())
	default:
		if !errors.Is(err, job.ErrLeaseLost) {
			e.log.Error("engine: the wait was not recorded; the job comes back when its lease expires", "job_id", x.job.ID,
				"kind", x.job.Kind, "err", err)
		}
		x.rec.Finished(observe.LeaseLost, ran)
		x.span.End(observe.LeaseLost, err.Error(), e.clock.Now())
	}
}
