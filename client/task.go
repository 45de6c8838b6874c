package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jobd/jobd/api"
)

// Task is one claimed job handed to a handler: its args decoded as A.
type Task[A any] struct {
	// Job is the job as claimed, with its attempt, checkpoint and lease.
	Job  api.ClaimedJob
	Args A

	w *Worker
}

// SetProgress reports progress (and extends the lease). When the server
// says cancel was requested, the task's context is cancelled.
func (t *Task[A]) SetProgress(ctx context.Context, done, total int64, phase string) error {
	cancel, err := t.w.c.ReportProgress(ctx, t.Job.ID, t.Job.LeaseToken, api.Progress{Phase: phase, Done: done, Total: total})
	if err != nil {
		t.w.lost(t.Job.ID, err)
		return err
	}
	if cancel {
		t.w.stop(t.Job.ID, ErrJobCanceled)
	}
	return nil
}

// SaveCheckpoint stores v, as JSON, as the job's checkpoint (and extends
// the lease): a retry of the job finds it with Checkpoint. When the
// server says cancel was requested, the task's context is cancelled.
func (t *Task[A]) SaveCheckpoint(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("jobd client: encode checkpoint: %w", err)
	}
	cancel, err := t.w.c.Checkpoint(ctx, t.Job.ID, t.Job.LeaseToken, b)
	if err != nil {
		t.w.lost(t.Job.ID, err)
		return err
	}
	t.Job.Checkpoint = b
	if cancel {
		t.w.stop(t.Job.ID, ErrJobCanceled)
	}
	return nil
}

// Checkpoint decodes the job's last saved checkpoint into v and reports
// whether there was one.
func (t *Task[A]) Checkpoint(v any) (bool, error) {
	raw := t.Job.Checkpoint
	if len(raw) == 0 || string(raw) == "null" {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, fmt.Errorf("jobd client: decode checkpoint: %w", err)
	}
	return true, nil
}

// Causes of a task context's cancellation (context.Cause).
var (
	// ErrJobCanceled: the job's cancel was requested.
	ErrJobCanceled = errors.New("jobd: job canceled")
	// ErrLeaseLost: the lease expired and the job may run elsewhere; the
	// handler's outcome would be refused. An *Error of the server's
	// lease-lost problem (409) matches it too.
	ErrLeaseLost = errors.New("jobd: lease lost")
	// ErrShuttingDown: the worker stopped and its shutdown timeout passed.
	ErrShuttingDown = errors.New("jobd: worker shutting down")
	// ErrTimedOut: the attempt reached its deadline (the claimed job's
	// Deadline: its timeout, or its queue's): the server refuses its
	// writes from then on and ends it "timed-out"; a handler's failure is
	// not reported.
	ErrTimedOut = errors.New("jobd: the attempt passed its deadline")
)

// permanent marks an error that must not be retried.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent wraps err so that the job fails for good instead of being
// retried.
func Permanent(err error) error { return permanent{err} }

// retryAfter marks an error whose job waits delay before its next
// attempt.
type retryAfter struct {
	err   error
	delay time.Duration
}

func (r retryAfter) Error() string { return r.err.Error() }
func (r retryAfter) Unwrap() error { return r.err }

// RetryAfter wraps err so that the job, when it has attempts left, waits
// d before its next attempt instead of its queue's backoff (as
// engine.RetryAfter does in the engine).
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		err = errors.New("retry requested")
	}
	return retryAfter{err: err, delay: max(d, 0)}
}

// throttle marks an error whose job's downstream is overloaded.
type throttle struct {
	err   error
	delay time.Duration
}

func (e throttle) Error() string { return e.err.Error() }
func (e throttle) Unwrap() error { return e.err }

// Throttle wraps err to say the downstream the job calls is overloaded
// (it answered 429, say): the job is queued again after d, its attempt
// not counted, and no job of its queue, or of its partition_key when the
// queue's throttle_by is partition_key, starts on any node or worker for
// d (the fail call's "throttle", as engine.Throttle does in the engine).
// d is capped at api.MaxThrottle; a d below one millisecond is one
// millisecond. Throttle wins over Permanent and RetryAfter wrapped around
// or inside it.
func Throttle(err error, d time.Duration) error {
	if err == nil {
		err = errors.New("throttled by the downstream")
	}
	return throttle{err: err, delay: min(max(d, time.Millisecond), api.MaxThrottle)}
}

// handler runs one claimed job and returns its result.
type handler func(ctx context.Context, w *Worker, j api.ClaimedJob) (json.RawMessage, error)

// Handle registers fn for jobs of kind: their args are decoded into A
// (bad args fail the job for good), fn's result R is encoded as the job's
// result. An error fails the job, retryably (after its queue's backoff,
// or RetryAfter's delay) unless wrapped by Permanent; one wrapped by
// Throttle requeues it without counting the attempt and stops its queue
// or partition for the delay; a panic is a retryable failure too.
// Register every handler before Run.
func Handle[A, R any](w *Worker, kind string, fn func(ctx context.Context, t *Task[A]) (R, error)) {
	h := func(ctx context.Context, w *Worker, j api.ClaimedJob) (json.RawMessage, error) {
		t := &Task[A]{Job: j, w: w}
		if len(j.Args) > 0 {
			if err := json.Unmarshal(j.Args, &t.Args); err != nil {
				return nil, Permanent(fmt.Errorf("decode args: %w", err))
			}
		}
		res, err := fn(ctx, t)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(res)
		if err != nil {
			return nil, Permanent(fmt.Errorf("encode result: %w", err))
		}
		return b, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if kind == "" {
		w.fallback = h
	} else {
		w.handlers[kind] = h
	}
}
