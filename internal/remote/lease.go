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
// requested. Done and Total are not negative, and Done is at most a
// Total above zero (Total 0: unknown): a *job.ValidationError naming the
// member otherwise.
func (s *Service) Progress(ctx context.Context, lease store.Lease, p job.Progress) (cancelRequested bool, err error) {
	switch {
	case p.Total < 0:
		return false, job.Invalid("total", "must not be negative, got %d", p.Total)
	case p.Done < 0:
		return false, job.Invalid("done", "must not be negative, got %d", p.Done)
	case p.Total > 0 && p.Done > p.Total:
		return false, job.Invalid("done", "must be at most total (%d), got %d", p.Total, p.Done)
	}
	return s.store.JobSetProgress(ctx, lease, p)
}

// Checkpoint stores a claimed job's checkpoint, kept across retries, and
// extends its lease (job.ErrLeaseLost when it is not held). It reports
// whether cancel was requested.
func (s *Service) Checkpoint(ctx context.Context, lease store.Lease, checkpoint json.RawMessage) (cancelRequested bool, err error) {
	if len(checkpoint) == 0 {
		return false, job.Invalid("checkpoint", "is required")
	}
	return s.store.JobSetCheckpoint(ctx, lease, checkpoint)
}

// Outcome is one outcome a worker reports for a job it claimed.
type Outcome struct {
	// Lease names the job, its lease token and the worker (LeaseOf).
	Lease store.Lease
	// Status is store.OutcomeSucceeded (complete), store.OutcomeFailed
	// (fail) or store.OutcomeReleased (release).
	Status store.OutcomeStatus
	// Result is a success's.
	Result json.RawMessage
	// Failure is a failure's.
	Failure Failure
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

// Answer is what became of one outcome.
type Answer struct {
	// FinishResult is the store's: the state the job reached, or, for a
	// repeat of the outcome applied last (Repeat), its current state.
	store.FinishResult
	// Err refuses the outcome: job.ErrLeaseLost when the lease is not
	// held (and the outcome repeats none), a *job.ValidationError naming
	// the member at fault. Nothing was written for it.
	Err error
}

// Complete finishes a claimed job with its result.
func (s *Service) Complete(ctx context.Context, w *store.Worker, lease store.Lease, result json.RawMessage) (store.FinishResult, error) {
	return s.one(ctx, w, Outcome{Lease: lease, Status: store.OutcomeSucceeded, Result: result})
}

// Fail fails a claimed job's attempt (see Failure).
func (s *Service) Fail(ctx context.Context, w *store.Worker, lease store.Lease, f Failure) (store.FinishResult, error) {
	return s.one(ctx, w, Outcome{Lease: lease, Status: store.OutcomeFailed, Failure: f})
}

// Release gives a claimed job back unfinished: it is queued again at
// once, its attempt not counted (canceled instead when its cancel was
// requested), as the engine releases its jobs at shutdown.
func (s *Service) Release(ctx context.Context, w *store.Worker, lease store.Lease) (store.FinishResult, error) {
	return s.one(ctx, w, Outcome{Lease: lease, Status: store.OutcomeReleased})
}

// one applies one outcome: its answer's error, or the store's.
func (s *Service) one(ctx context.Context, w *store.Worker, o Outcome) (store.FinishResult, error) {
	answers, err := s.Finish(ctx, w, []Outcome{o})
	if err != nil {
		return store.FinishResult{}, err
	}
	return answers[0].FinishResult, answers[0].Err
}

// MaxOutcomes caps the outcomes of one Finish.
const MaxOutcomes = MaxClaimJobs

// Finish applies a worker's outcomes, each fenced by its lease, in one
// store call (store.Store.JobFinish, as the engine's finisher writes its
// batches), and answers each in order. An outcome that breaks a rule
// (a throttle out of range, a negative retry_after, text no store keeps)
// is refused alone, naming its member, and the others are applied. An
// outcome sent again after its answer was lost, with the same lease
// token and status, is answered as a repeat with the job's current state
// (store.FinishResult.Repeat). A retryable failure without a delay of
// its own waits its queue's backoff (Policy.RetryDelay), read by the
// store with the lease. The outcomes count in the worker's record; the
// error is the store's, when the call failed as a whole.
func (s *Service) Finish(ctx context.Context, w *store.Worker, outcomes []Outcome) ([]Answer, error) {
	if len(outcomes) > MaxOutcomes {
		return nil, job.Invalid("outcomes", "at most %d outcomes at once, got %d", MaxOutcomes, len(outcomes))
	}
	answers := make([]Answer, len(outcomes))
	batch := make([]store.Outcome, 0, len(outcomes))
	index := make([]int, 0, len(outcomes))
	for i, o := range outcomes {
		out, err := s.outcome(o)
		if err == nil {
			err = store.CheckOutcomes([]store.Outcome{out})
		}
		if err != nil {
			answers[i].Err = unwrapOutcome(err)
			continue
		}
		batch = append(batch, out)
		index = append(index, i)
	}
	if len(batch) == 0 {
		return answers, nil
	}
	res, err := s.store.JobFinish(ctx, batch)
	if err != nil {
		return nil, err
	}
	// The counts in the worker's record (with its sign of life) follow
	// the outcomes' commit: a transaction of their own is cheaper, on
	// PostgreSQL, than holding the outcomes' one for another statement.
	if done, failed := counts(batch, res); done+failed > 0 {
		switch err := s.store.WorkerSeen(ctx, w.ID, "", done, failed); {
		case err == nil:
			s.noteSeen(w.ID)
		case !errors.Is(err, job.ErrNotFound):
			s.log.Warn("count a worker's finished jobs", "worker", w.ID, "err", err)
		}
	}
	for k, r := range res {
		i := index[k]
		answers[i].FinishResult = r
		if r.Repeat {
			continue // recorded when first applied
		}
		s.finished(ctx, batch[k], r)
		if r.Lost {
			answers[i].Err = job.ErrLeaseLost
		}
	}
	return answers, nil
}

// counts are the jobs the applied outcomes of batch (res) succeeded, and
// those they failed (a failure queued again counts too); a release, a
// repeat and a lost lease count nothing.
func counts(batch []store.Outcome, res []store.FinishResult) (done, failed int) {
	for k, r := range res {
		switch {
		case r.Lost || r.Repeat:
		case r.State == job.StateSucceeded:
			done++
		case batch[k].Status != store.OutcomeReleased:
			failed++
		}
	}
	return done, failed
}

// outcome is the store's outcome of o, checked.
func (s *Service) outcome(o Outcome) (store.Outcome, error) {
	out := store.Outcome{Lease: o.Lease, Outcome: job.Outcome{Status: o.Status}}
	switch o.Status {
	case store.OutcomeSucceeded:
		out.Result = o.Result
		return out, nil
	case store.OutcomeReleased:
		return out, nil
	case store.OutcomeFailed:
	default:
		return out, job.Invalid("outcome", "must be complete, fail or release")
	}
	f := o.Failure
	out.Error, out.Retryable = job.CutText(f.Error, MaxWorkerError), f.Retryable
	if f.Throttle != nil {
		d := *f.Throttle
		if d <= 0 || d > job.MaxThrottle {
			return out, job.Invalid("throttle", "must be above 0s and at most %s, got %s", job.MaxThrottle, d)
		}
		out.Throttle = d
	}
	switch {
	case f.RetryAfter != nil && *f.RetryAfter < 0:
		return out, job.Invalid("retry_after", "must not be negative, got %s", *f.RetryAfter)
	case out.Throttle > 0:
		// The throttle decides when the job runs again (job.Finish).
	case f.RetryAfter != nil:
		out.RetryDelay = *f.RetryAfter
	case f.Retryable:
		// The store reads the queue and attempt with the lease.
		out.Backoff = s.policy.RetryDelay
	}
	return out, nil
}

// unwrapOutcome drops what store.CheckOutcomes adds to the error of an
// outcome it refuses ("outcome 0: "), keeping the *job.ValidationError,
// which names the member.
func unwrapOutcome(err error) error {
	var ve *job.ValidationError
	if errors.As(err, &ve) {
		return ve
	}
	return err
}
