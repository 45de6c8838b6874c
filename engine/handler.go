package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/jobd/jobd/job"
)

// handlerFunc runs one job and returns its result as JSON.
type handlerFunc func(ctx context.Context, x *execution) (json.RawMessage, error)

// Register adds a typed handler for kind. The job's args are JSON-decoded
// into A (a decode error fails the job permanently) and the result R is
// JSON-encoded into the job's result. The handler's context is cancelled,
// with a cause (see ErrCancelRequested, ErrLeaseLost, ErrShutdown,
// ErrTimedOut), when it should stop; for a job with a timeout it carries
// the attempt's deadline. A re-run job says so in j.Rerun, with the
// result it had in j.PreviousResult; a schedule's job its tick in
// j.ScheduledFor. Register panics on an empty kind, a nil fn, or a kind
// registered twice: those are programming errors.
//
// Handlers run on goroutines the engine keeps between jobs, as net/http
// serves the requests of one connection: a handler that locks its
// goroutine to its thread (runtime.LockOSThread) or sets its goroutine's
// profiler labels must undo that before it returns, or do that work on a
// goroutine of its own, whose end discards a thread left locked.
func Register[A, R any](e *Engine, kind string, fn func(ctx context.Context, j *Job[A]) (R, error)) {
	if kind == "" || fn == nil {
		panic("engine: Register needs a kind and a handler")
	}
	e.register(kind, func(ctx context.Context, x *execution) (json.RawMessage, error) {
		j := &Job[A]{Job: x.job, x: x}
		if err := decodeArgs(x.job.Args, &j.Args); err != nil {
			return nil, Permanent(fmt.Errorf("decode args of kind %q: %w", kind, err))
		}
		r, err := fn(ctx, j)
		if err != nil {
			return nil, err
		}
		if _, none := any(r).(NoResult); none {
			return nil, nil
		}
		raw, err := json.Marshal(r)
		if err != nil {
			return nil, Permanent(fmt.Errorf("encode result of kind %q: %w", kind, err))
		}
		return raw, nil
	})
}

// NoResult is the result type of a handler whose jobs have no result:
// a job whose handler returns NoResult{} succeeds with none (its result
// reads as absent, not as {} or null).
//
//	engine.Register(e, "ping", func(ctx context.Context, j *engine.Job[Ping]) (engine.NoResult, error) {
//		return engine.NoResult{}, ping(ctx, j.Args.Host)
//	})
type NoResult struct{}

// decodeArgs decodes a job's args into dst. Args of type json.RawMessage
// are copied as they are: the store holds only valid JSON, and
// json.Unmarshal would scan it all again to say so.
func decodeArgs[A any](args json.RawMessage, dst *A) error {
	args = bytes.TrimSpace(args)
	if len(args) == 0 {
		return nil
	}
	if raw, ok := any(dst).(*json.RawMessage); ok {
		*raw = bytes.Clone(args)
		return nil
	}
	return json.Unmarshal(args, dst)
}

func (e *Engine) register(kind string, h handlerFunc) {
	e.hmu.Lock()
	defer e.hmu.Unlock()
	if _, ok := e.handlers[kind]; ok {
		panic(fmt.Sprintf("engine: kind %q registered twice", kind))
	}
	e.handlers[kind] = h
}

func (e *Engine) handler(kind string) handlerFunc {
	e.hmu.RLock()
	defer e.hmu.RUnlock()
	return e.handlers[kind]
}

// Job is a running job as its handler sees it: the job row (attempt,
// checkpoint, lock key...) and its decoded args. A Job built by hand, with
// no engine behind it (to unit-test a handler), works too: SetProgress
// does nothing and SaveCheckpoint only keeps the value in Job.Checkpoint.
type Job[A any] struct {
	*job.Job
	Args A

	x *execution
}

// SetProgress records the job's progress. It never blocks on the
// database: the latest value is written at most once per
// Config.ProgressInterval, at once when the phase changes, and before the
// job's outcome.
func (j *Job[A]) SetProgress(p job.Progress) {
	if j.x != nil {
		j.x.progress.set(p)
	}
}

// SaveCheckpoint stores v, JSON-encoded, as the job's checkpoint at once
// (it is kept across attempts, see Checkpoint). The write is fenced by the
// lease: it returns an error wrapping ErrLeaseLost when this node no
// longer holds the job, and cancels the handler's context.
func (j *Job[A]) SaveCheckpoint(ctx context.Context, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode checkpoint: %w", err)
	}
	if j.x != nil {
		if err := j.x.saveCheckpoint(ctx, raw); err != nil {
			return err
		}
	}
	if j.Job != nil {
		j.Job.Checkpoint = raw
	}
	return nil
}

// Checkpoint decodes the checkpoint saved by this or an earlier attempt
// into v. With no checkpoint it does nothing and returns nil, leaving v
// as it was (the raw JSON is j.Job.Checkpoint, empty when there is none).
func (j *Job[A]) Checkpoint(v any) error {
	if j.Job == nil {
		return nil
	}
	cp := bytes.TrimSpace(j.Job.Checkpoint)
	if len(cp) == 0 || string(cp) == "null" {
		return nil
	}
	if err := json.Unmarshal(cp, v); err != nil {
		return fmt.Errorf("decode checkpoint: %w", err)
	}
	return nil
}
