// Package step is durable execution's handler side, shared by the engine
// (package engine, and jobd.Step) and the Go SDK (package client), which
// both import it: a step whose result is recorded when it succeeds, so
// that a later attempt of the same job returns the recorded result
// without running it again, and the waits that end an attempt to be
// claimed again when what it waits for comes (docs/steps-and-children.md).
//
// It depends on the standard library only, so that the SDK stays light.
//
// What may go in a step: work that is idempotent up to the point it
// records. A step runs at least once: should its attempt end after the
// work and before the record (a crash, a lost lease), the next attempt
// runs it again; once recorded, it never runs again for that job.
package step

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Recorder keeps the steps of the job a handler runs: the engine's
// execution of a claimed job, or the SDK's task.
type Recorder interface {
	// Lookup returns the result a step of that name recorded, by this
	// attempt or an earlier one, and whether one did.
	Lookup(name string) (json.RawMessage, bool)
	// Record records a step that succeeded with result, started at
	// startedAt, fenced by the job's lease: once it returns nil, the
	// step is durable.
	Record(ctx context.Context, name string, result json.RawMessage, startedAt time.Time) error
}

type recorderKey struct{}

// WithRecorder returns ctx carrying r: the context the engine and the
// SDK give a handler.
func WithRecorder(ctx context.Context, r Recorder) context.Context {
	return context.WithValue(ctx, recorderKey{}, r)
}

// From returns the Recorder ctx carries; nil outside a handler.
func From(ctx context.Context) Recorder {
	r, _ := ctx.Value(recorderKey{}).(Recorder)
	return r
}

// ErrNoHandler is the error of a step, spawn or wait called outside a
// handler of jobd (a context that carries no Recorder).
var ErrNoHandler = errors.New("step: not inside a handler of jobd (the context carries no job)")

// Run runs the step name of the job ctx's handler runs: when an earlier
// run of the step recorded a result (this attempt, or an earlier attempt
// of the same job), it returns that result, decoded into T, without
// calling fn; otherwise it calls fn and, when fn succeeds, records its
// result (encoded as JSON) before it returns it. An error of fn is
// returned as it is and records nothing: the step runs again on the next
// attempt. A step's name is unique in its job.
func Run[T any](ctx context.Context, name string, fn func(ctx context.Context) (T, error)) (T, error) {
	var zero T
	r := From(ctx)
	if r == nil {
		return zero, ErrNoHandler
	}
	if raw, ok := r.Lookup(name); ok {
		var v T
		if len(raw) > 0 && string(raw) != "null" {
			if err := json.Unmarshal(raw, &v); err != nil {
				return zero, fmt.Errorf("step %q: decode its recorded result: %w", name, err)
			}
		}
		return v, nil
	}
	started := time.Now()
	v, err := fn(ctx)
	if err != nil {
		return zero, err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return zero, fmt.Errorf("step %q: encode its result: %w", name, err)
	}
	if err := r.Record(ctx, name, raw, started); err != nil {
		return zero, fmt.Errorf("step %q: record it: %w", name, err)
	}
	return v, nil
}

// The waits a handler ends its attempt with (Wait.For).
const (
	ForChildren = "children"
	ForSignal   = "signal"
	ForUntil    = "until"
)

// Wait is the error a handler returns to end its attempt waiting: the
// engine (or the SDK) then tells the server, instead of an outcome, and
// the job is claimed again, as the same job, when what it waits for
// comes (its children all final, the signal sent or its timeout passed,
// the time come). Make one with WaitForChildren, WaitForSignal or
// SleepUntil.
type Wait struct {
	// For is ForChildren, ForSignal or ForUntil.
	For string
	// Signal names the signal of a ForSignal, and Timeout bounds it (0:
	// none).
	Signal  string
	Timeout time.Duration
	// Until is when a ForUntil ends.
	Until time.Time
}

func (w *Wait) Error() string {
	switch w.For {
	case ForSignal:
		if w.Timeout > 0 {
			return fmt.Sprintf("wait for the signal %q (timeout %s)", w.Signal, w.Timeout)
		}
		return fmt.Sprintf("wait for the signal %q", w.Signal)
	case ForUntil:
		return "wait until " + w.Until.UTC().Format(time.RFC3339Nano)
	}
	return "wait for " + w.For
}

// AsWait returns the Wait err is or wraps; nil for none.
func AsWait(err error) *Wait {
	var w *Wait
	if errors.As(err, &w) {
		return w
	}
	return nil
}

// WaitForChildren is the error that ends the attempt waiting for every
// child the job spawned to be final.
func WaitForChildren() error { return &Wait{For: ForChildren} }

// WaitForSignal is the error that ends the attempt waiting for the
// signal name, for at most timeout (0: for as long as it takes).
func WaitForSignal(name string, timeout time.Duration) error {
	return &Wait{For: ForSignal, Signal: name, Timeout: timeout}
}

// SleepUntil is the error that ends the attempt until t.
func SleepUntil(t time.Time) error { return &Wait{For: ForUntil, Until: t} }
