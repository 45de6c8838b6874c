package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/step"
)

// Durable execution in the Go SDK (docs/steps-and-children.md), the
// engine's API mirrored for a remote handler: Step (package step, as
// engine.Step), Spawn, and the waits a handler returns (WaitForChildren,
// WaitForSignal, SleepUntil); the worker then ends the attempt waiting
// (POST /api/v1/worker/jobs/{id}/wait) instead of reporting an outcome.
// A resumed task reads what it resumes from in t.Job.Steps, Children and
// Signal.

// Step runs the step name of the task whose handler ctx is (step.Run):
// on a later attempt of the same job a step that succeeded returns its
// recorded result without running again.
func Step[T any](ctx context.Context, name string, fn func(ctx context.Context) (T, error)) (T, error) {
	return step.Run(ctx, name, fn)
}

// Child is a child to spawn: a job submission with its key, unique per
// parent.
type Child struct {
	Key string `json:"key"`
	api.SubmitRequest
}

// Spawn spawns children of the task whose handler ctx is, atomically with
// its lease check, idempotent per key (SpawnChildren).
func Spawn(ctx context.Context, children ...Child) ([]api.SpawnedChild, error) {
	r, ok := step.From(ctx).(*taskSteps)
	if !ok {
		return nil, step.ErrNoHandler
	}
	res, err := r.w.c.SpawnChildren(ctx, r.job.ID, r.job.LeaseToken, children)
	if err != nil {
		r.w.lost(r.job.ID, err)
		return nil, err
	}
	return res, nil
}

// WaitForChildren is the error a handler returns to end its attempt until
// every child it spawned is final.
func WaitForChildren(ctx context.Context) error { return inTask(ctx, step.WaitForChildren()) }

// WaitForSignal is the error a handler returns to end its attempt until
// the signal name comes, or timeout passes (0: none).
func WaitForSignal(ctx context.Context, name string, timeout time.Duration) error {
	return inTask(ctx, step.WaitForSignal(name, timeout))
}

// SleepUntil is the error a handler returns to end its attempt until t.
func SleepUntil(ctx context.Context, t time.Time) error { return inTask(ctx, step.SleepUntil(t)) }

func inTask(ctx context.Context, wait error) error {
	if step.From(ctx) == nil {
		return step.ErrNoHandler
	}
	return wait
}

// RecordStep records a step of a claimed job (POST
// /api/v1/worker/jobs/{id}/steps); startedAt zero: when it is recorded.
func (c *Client) RecordStep(ctx context.Context, id, token uuid.UUID, name string, result json.RawMessage, startedAt time.Time) (*api.StepResponse, error) {
	req := api.StepRequest{LeaseToken: token, Name: name, Result: result}
	if !startedAt.IsZero() {
		req.StartedAt = &startedAt
	}
	var out api.StepResponse
	if _, _, err := c.do(ctx, http.MethodPost, workerJobPath(id, "steps"), nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SpawnChildren spawns children of a claimed job (POST
// /api/v1/worker/jobs/{id}/children).
func (c *Client) SpawnChildren(ctx context.Context, id, token uuid.UUID, children []Child) ([]api.SpawnedChild, error) {
	req := api.ChildrenRequest{LeaseToken: token, Children: make([]json.RawMessage, len(children))}
	for i, ch := range children {
		b, err := json.Marshal(ch)
		if err != nil {
			return nil, fmt.Errorf("jobd client: encode child %q: %w", ch.Key, err)
		}
		req.Children[i] = b
	}
	var out api.ChildrenResponse
	if _, _, err := c.do(ctx, http.MethodPost, workerJobPath(id, "children"), nil, req, &out); err != nil {
		return nil, err
	}
	return out.Children, nil
}

// EndWaiting ends a claimed job's attempt waiting (POST
// /api/v1/worker/jobs/{id}/wait).
func (c *Client) EndWaiting(ctx context.Context, id, token uuid.UUID, w api.WaitRequest) (*api.WaitResponse, error) {
	w.LeaseToken = token
	var out api.WaitResponse
	if _, _, err := c.do(ctx, http.MethodPost, workerJobPath(id, "wait"), nil, w, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Signal sends the signal name, with payload, to a job (POST
// /api/v1/jobs/{id}/signal).
func (c *Client) Signal(ctx context.Context, id uuid.UUID, name string, payload json.RawMessage) (*api.SignalResponse, error) {
	var out api.SignalResponse
	if _, _, err := c.do(ctx, http.MethodPost, "/api/v1/jobs/"+id.String()+"/signal", nil, api.SignalRequest{Name: name, Payload: payload}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// waitRequest is the wire form of a handler's wait.
func waitRequest(w *step.Wait) api.WaitRequest {
	req := api.WaitRequest{For: w.For, Signal: w.Signal}
	if w.For == step.ForUntil {
		until := w.Until.UTC().Format(time.RFC3339Nano)
		req.For, req.Until = "", &until
	}
	if w.Timeout > 0 {
		d := api.Duration(w.Timeout)
		req.Timeout = &d
	}
	return req
}

// taskSteps is a task's step.Recorder: the steps its claim carried and
// those it recorded since.
type taskSteps struct {
	w        *Worker
	job      api.ClaimedJob
	mu       sync.Mutex
	recorded map[string]json.RawMessage
}

// Lookup returns a recorded step's result (step.Recorder).
func (r *taskSteps) Lookup(name string) (json.RawMessage, bool) {
	r.mu.Lock()
	raw, ok := r.recorded[name]
	r.mu.Unlock()
	if ok {
		return raw, true
	}
	raw, ok = r.job.Steps[name]
	return raw, ok
}

// Record records a step through the server (step.Recorder).
func (r *taskSteps) Record(ctx context.Context, name string, result json.RawMessage, startedAt time.Time) error {
	res, err := r.w.c.RecordStep(ctx, r.job.ID, r.job.LeaseToken, name, result, startedAt)
	if err != nil {
		r.w.lost(r.job.ID, err)
		return err
	}
	r.mu.Lock()
	if r.recorded == nil {
		r.recorded = make(map[string]json.RawMessage)
	}
	r.recorded[name] = res.Step.Result
	r.mu.Unlock()
	if res.CancelRequested {
		r.w.stop(r.job.ID, ErrJobCanceled)
	}
	return nil
}

// wait ends j's attempt waiting as w says, in place of an outcome; it
// reports whether the server took the wait.
func (w *Worker) wait(ctx context.Context, j api.ClaimedJob, wt *step.Wait) bool {
	_, err := w.c.EndWaiting(ctx, j.ID, j.LeaseToken, waitRequest(wt))
	if err != nil {
		w.log.Warn("jobd worker: the wait was refused; the job comes back when its lease expires", "job_id", j.ID, "err", err)
		return false
	}
	return true
}
