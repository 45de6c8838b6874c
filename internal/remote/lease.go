package remote

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// LeaseOf is the lease a worker's call names: the job, the token it
// presents and the calling worker as the owner, so that a worker holding
// another one's token still cannot write for it (job.ErrLeaseLost).
func LeaseOf(w *store.Worker, id, token uuid.UUID) store.Lease {
	return store.Lease{ID: id, Token: token, Owner: w.ID}
}

// Heartbeat keeps worker w online with status ("" keeps it as it is;
// else active, idle or busy) and extends the leases it still holds, in
// one batch of at most MaxClaimJobs. It answers, for each lease in
// order, whether it is still held and whether cancel was requested.
func (s *Service) Heartbeat(ctx context.Context, w *store.Worker, status store.WorkerStatus, leases []store.Lease) ([]store.HeartbeatResult, error) {
	if status != "" && !status.Valid() {
		return nil, job.Invalid("status", "must be active, idle or busy, got %q", status)
	}
	if len(leases) > MaxClaimJobs {
		return nil, job.Invalid("leases", "at most %d leases per heartbeat", MaxClaimJobs)
	}
	if err := s.seen(ctx, w, status); err != nil {
		return nil, err
	}
	if len(leases) == 0 {
		return []store.HeartbeatResult{}, nil
	}
	for i := range leases {
		leases[i].Owner = w.ID
	}
	return s.store.JobHeartbeat(ctx, w.ID, leases)
}

// Progress stores a claimed job's progress and extends its lease
// (job.ErrLeaseLost when it is not held); it reports whether cancel was
// requested.
func (s *Service) Progress(ctx context.Context, lease store.Lease, p job.Progress) (cancelRequested bool, err error) {
	return s.store.JobSetProgress(ctx, lease, p)
}

// Checkpoint stores a claimed job's checkpoint, kept across retries, and
// extends its lease (job.ErrLeaseLost when it is not held).
func (s *Service) Checkpoint(ctx context.Context, lease store.Lease, checkpoint json.RawMessage) error {
	if len(checkpoint) == 0 {
		return job.Invalid("checkpoint", "is required")
	}
	return s.store.JobSetCheckpoint(ctx, lease, checkpoint)
}

// Complete finishes a claimed job with its result.
func (s *Service) Complete(ctx context.Context, w *store.Worker, lease store.Lease, result json.RawMessage) (store.FinishResult, error) {
	return s.finish(ctx, w, store.Outcome{Lease: lease, Status: store.OutcomeSucceeded, Result: result})
}

// Failure is a worker's report of a failed attempt.
type Failure struct {
	// Error is the failure's text, cut to MaxWorkerError.
	Error string
	// Retryable: with attempts left, the job runs again, after
	// RetryAfter when set, else after its queue's backoff
	// (Policy.RetryDelay). Not retryable, the job fails for good.
	Retryable bool
	// RetryAfter, when set, is not negative.
	RetryAfter *time.Duration
	// Throttle, when set, is above zero and at most job.MaxThrottle: the
	// job is queued again after it, its attempt not counted, and its
	// queue or partition stops as long (store.Outcome.Throttle).
	Throttle *time.Duration
}

// Fail fails a claimed job's attempt (see Failure).
func (s *Service) Fail(ctx context.Context, w *store.Worker, lease store.Lease, f Failure) (store.FinishResult, error) {
	out := store.Outcome{
		Lease: lease, Status: store.OutcomeFailed,
		Error: job.CutText(f.Error, MaxWorkerError), Retryable: f.Retryable,
	}
	if f.Throttle != nil {
		d := *f.Throttle
		if d <= 0 || d > job.MaxThrottle {
			return store.FinishResult{}, job.Invalid("throttle", "must be above 0s and at most %s, got %s", job.MaxThrottle, d)
		}
		out.Throttle = d
	}
	switch {
	case f.RetryAfter != nil && *f.RetryAfter < 0:
		return store.FinishResult{}, job.Invalid("retry_after", "must not be negative, got %s", *f.RetryAfter)
	case out.Throttle > 0:
		// The throttle decides when the job runs again (job.Finish).
	case f.RetryAfter != nil:
		out.RetryDelay = *f.RetryAfter
	case f.Retryable:
		// The attempt and queue cannot change while the lease is held;
		// a job whose lease is gone is refused by JobFinish below.
		j, err := s.store.JobGet(ctx, lease.ID)
		if errors.Is(err, job.ErrNotFound) {
			return store.FinishResult{}, job.ErrLeaseLost
		}
		if err != nil {
			return store.FinishResult{}, err
		}
		out.RetryDelay = s.policy.RetryDelay(j.Queue, j.Attempt)
	}
	return s.finish(ctx, w, out)
}

// Release gives a claimed job back unfinished: it is queued again at
// once, its attempt not counted (canceled instead when its cancel was
// requested), as the engine releases its jobs at shutdown.
func (s *Service) Release(ctx context.Context, w *store.Worker, lease store.Lease) (store.FinishResult, error) {
	return s.finish(ctx, w, store.Outcome{Lease: lease, Status: store.OutcomeReleased})
}

// finish applies a worker's outcome, fenced by its lease, and counts it
// in the worker's record: job.ErrLeaseLost when the lease is not held.
func (s *Service) finish(ctx context.Context, w *store.Worker, out store.Outcome) (store.FinishResult, error) {
	res, err := s.store.JobFinish(ctx, []store.Outcome{out})
	if err != nil {
		return store.FinishResult{}, err
	}
	s.finished(ctx, out, res[0])
	if res[0].Lost {
		return res[0], job.ErrLeaseLost
	}
	done, failed := 0, 0
	switch {
	case res[0].State == job.StateSucceeded:
		done = 1
	case out.Status != store.OutcomeReleased:
		failed = 1
	}
	if err := s.store.WorkerSeen(ctx, w.ID, "", done, failed); err != nil && !errors.Is(err, job.ErrNotFound) {
		s.log.Warn("count a worker's finished job", "worker", w.ID, "err", err)
	}
	return res[0], nil
}
