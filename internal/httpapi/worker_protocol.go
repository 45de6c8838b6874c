package httpapi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/clock"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// Bounds of a claim.
const (
	maxClaimQueues = 32
	maxClaimJobs   = 1000
	// maxWorkerError caps the error text a worker reports; a longer one
	// is cut on a rune boundary.
	maxWorkerError = 64 << 10
)

// workerHeartbeat: POST /api/v1/worker/heartbeat {status, leases} →
// {leases: [{id, held, cancel_requested}]}: keeps the worker online and
// extends the leases it still holds, in one batch.
func (s *server) workerHeartbeat(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	wk := callingWorker(r)
	var req api.HeartbeatRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	status := store.WorkerStatus(req.Status)
	if req.Status != "" && !status.Valid() {
		return job.Invalid("status", "must be active, idle or busy, got %q", req.Status)
	}
	if len(req.Leases) > maxClaimJobs {
		return job.Invalid("leases", "at most %d leases per heartbeat", maxClaimJobs)
	}
	if err := s.store.WorkerSeen(r.Context(), wk.ID, status, 0, 0); err != nil {
		return err
	}
	out := api.HeartbeatResponse{Leases: make([]api.LeaseState, len(req.Leases))}
	if len(req.Leases) > 0 {
		leases := make([]store.Lease, len(req.Leases))
		for i, l := range req.Leases {
			leases[i] = store.Lease{ID: l.ID, Token: l.LeaseToken, Owner: wk.ID}
		}
		res, err := s.store.JobHeartbeat(r.Context(), wk.ID, leases)
		if err != nil {
			return err
		}
		for i, h := range res {
			out.Leases[i] = api.LeaseState{ID: req.Leases[i].ID, Held: h.Held, CancelRequested: h.CancelRequested}
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

// workerClaim: POST /api/v1/worker/claim {queues, max, wait} → {jobs}.
// With a wait and no job ready, it long-polls: it claims again each time
// the store says one of the queues may have jobs, after the pacing delay
// of a limited or throttled queue (Config.ClaimPace), and once more when
// the wait ends.
func (s *server) workerClaim(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	wk := callingWorker(r)
	var req api.ClaimRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	if len(req.Queues) == 0 || len(req.Queues) > maxClaimQueues {
		return job.Invalid("queues", "list 1 to %d queues", maxClaimQueues)
	}
	if req.Max == 0 {
		req.Max = 1
	}
	if req.Max < 0 || req.Max > maxClaimJobs {
		return job.Invalid("max", "must be between 1 and %d, got %d", maxClaimJobs, req.Max)
	}
	wait := time.Duration(req.Wait)
	if wait < 0 || wait > MaxClaimWait {
		return job.Invalid("wait", "must be between 0s and %s, got %s", MaxClaimWait, wait)
	}
	if err := checkClaimQueues(wk, req.Queues); err != nil {
		return err
	}
	ctx := r.Context()
	if err := s.store.WorkerSeen(ctx, wk.ID, "", 0, 0); err != nil {
		return err
	}
	if wait > 0 {
		holdOpen(w, wait+answerMargin) // beyond the server's write timeout
	}
	// Subscribe before the first claim, so that no wake-up falls between.
	wake := make(chan struct{}, 1)
	if wait > 0 && s.cfg.Wakeups != nil {
		unsubscribe := s.cfg.Wakeups(func(queue string) {
			if queue == "" || slices.Contains(req.Queues, queue) {
				select {
				case wake <- struct{}{}:
				default:
				}
			}
		})
		defer unsubscribe()
	}
	var deadline <-chan time.Time
	if wait > 0 {
		t := s.clock.NewTimer(wait)
		defer t.Stop()
		deadline = t.C()
	}
	var pace clock.Timer
	defer func() {
		if pace != nil {
			pace.Stop()
		}
	}()
	for {
		jobs, err := s.claimFor(ctx, wk, req)
		s.claimed(r, jobs)
		if err != nil {
			return err
		}
		if len(jobs) > 0 || deadline == nil {
			return writeJSON(w, http.StatusOK, claimResponse(jobs))
		}
		var paced <-chan time.Time
		// Without a pacing delay, a safety net: a claim again each
		// second, as a node polls its idle queues, for what no wake-up
		// announces (a claim that a node's stale view of newly limited
		// queues refused; see store.QueueStore.QueueSetLimits).
		if d := cmp.Or(s.claimPace(req.Queues), longPollRecheck); d > 0 {
			if pace == nil {
				pace = s.clock.NewTimer(d)
			} else {
				pace.Reset(d)
			}
			paced = pace.C()
		}
		select {
		case <-wake:
		case <-paced:
		case <-deadline:
			deadline = nil // one last claim, then answer
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// longPollRecheck is the safety net of a long-polling claim of queues
// none of which is paced.
const longPollRecheck = time.Second

// claimPace is the soonest pacing delay of queues (Config.ClaimPace): 0
// when none of them is limited or throttled.
func (s *server) claimPace(queues []string) time.Duration {
	if s.cfg.ClaimPace == nil {
		return 0
	}
	var d time.Duration
	for _, q := range queues {
		if p := s.cfg.ClaimPace(q); p > 0 && (d == 0 || p < d) {
			d = p
		}
	}
	return d
}

// claimFor claims up to req.Max jobs over req.Queues, in order. The
// claims of several queues run in one transaction: when one fails, those
// before it are undone with it, so that no job is left leased to a worker
// that was never told of it.
func (s *server) claimFor(ctx context.Context, wk *store.Worker, req api.ClaimRequest) ([]*job.Job, error) {
	if len(req.Queues) == 1 {
		return s.claimQueues(ctx, s.store, wk, req)
	}
	var jobs []*job.Job
	err := s.store.InTx(ctx, func(ctx context.Context, ex store.Executor) error {
		var err error
		jobs, err = s.claimQueues(ctx, ex, wk, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	return jobs, nil
}

// claimQueues claims through ex up to req.Max jobs over req.Queues, in
// order, and stops at the first error.
func (s *server) claimQueues(ctx context.Context, ex store.Executor, wk *store.Worker, req api.ClaimRequest) ([]*job.Job, error) {
	var jobs []*job.Job
	for _, q := range req.Queues {
		n := req.Max - len(jobs)
		if n <= 0 {
			break
		}
		var timeout time.Duration
		if s.cfg.QueueTimeout != nil {
			timeout = s.cfg.QueueTimeout(q)
		}
		got, err := ex.JobClaim(ctx, store.ClaimParams{
			Queue: q, Max: n, Owner: wk.ID, WorkerID: wk.ID,
			Capabilities: wk.Capabilities, PreferWindow: s.cfg.PreferWindow, DefaultTimeout: timeout,
		})
		if err != nil {
			return nil, fmt.Errorf("claim from queue %q: %w", q, err)
		}
		jobs = append(jobs, got...)
	}
	return jobs, nil
}

func claimResponse(jobs []*job.Job) api.ClaimResponse {
	out := api.ClaimResponse{Jobs: make([]api.ClaimedJob, len(jobs))}
	for i, j := range jobs {
		out.Jobs[i] = api.ClaimedJob{Job: toAPIJob(j), LeaseToken: j.LeaseToken}
	}
	return out
}

// workerProgress: POST /api/v1/worker/jobs/{id}/progress → {cancel_requested}.
func (s *server) workerProgress(w http.ResponseWriter, r *http.Request) error {
	id, err := workerJobID(r)
	if err != nil {
		return err
	}
	var req api.ProgressRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	p := job.Progress{Phase: req.Phase, Done: req.Done, Total: req.Total, Items: req.Items}
	cancel, err := s.store.JobSetProgress(r.Context(), workerLease(r, id, req.LeaseToken), p)
	if err != nil { // job.ErrLeaseLost is answered 409 lease-lost
		return err
	}
	return writeJSON(w, http.StatusOK, api.ProgressResponse{CancelRequested: cancel})
}

// workerCheckpoint: POST /api/v1/worker/jobs/{id}/checkpoint → 204.
func (s *server) workerCheckpoint(w http.ResponseWriter, r *http.Request) error {
	id, err := workerJobID(r)
	if err != nil {
		return err
	}
	var req api.CheckpointRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	if len(req.Checkpoint) == 0 {
		return job.Invalid("checkpoint", "is required")
	}
	err = s.store.JobSetCheckpoint(r.Context(), workerLease(r, id, req.LeaseToken), req.Checkpoint)
	if err != nil { // job.ErrLeaseLost is answered 409 lease-lost
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// workerComplete: POST /api/v1/worker/jobs/{id}/complete {lease_token,
// result} → {state}.
func (s *server) workerComplete(w http.ResponseWriter, r *http.Request) error {
	id, err := workerJobID(r)
	if err != nil {
		return err
	}
	var req api.CompleteRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	return s.workerFinish(w, r, store.Outcome{
		Lease: workerLease(r, id, req.LeaseToken), Status: store.OutcomeSucceeded, Result: req.Result,
	})
}

// workerFail: POST /api/v1/worker/jobs/{id}/fail {lease_token, error,
// retryable, retry_after, throttle} → {state}. A retryable failure waits
// retry_after, or else the backoff of the job's queue, as in the engine;
// a throttle requeues the job after it, its attempt not counted, and
// stops its queue or partition for as long (store.Outcome.Throttle).
func (s *server) workerFail(w http.ResponseWriter, r *http.Request) error {
	id, err := workerJobID(r)
	if err != nil {
		return err
	}
	var req api.FailRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	out := store.Outcome{
		Lease: workerLease(r, id, req.LeaseToken), Status: store.OutcomeFailed,
		Error: job.CutText(req.Error, maxWorkerError), Retryable: req.Retryable,
	}
	if req.Throttle != nil {
		d := time.Duration(*req.Throttle)
		if d <= 0 || d > job.MaxThrottle {
			return job.Invalid("throttle", "must be above 0s and at most %s, got %s", job.MaxThrottle, d)
		}
		out.Throttle = d
	}
	switch {
	case req.RetryAfter != nil && *req.RetryAfter < 0:
		return job.Invalid("retry_after", "must not be negative, got %s", time.Duration(*req.RetryAfter))
	case out.Throttle > 0:
		// The throttle decides when the job runs again (job.Finish).
	case req.RetryAfter != nil:
		out.RetryDelay = time.Duration(*req.RetryAfter)
	case req.Retryable:
		// The attempt and queue cannot change while the lease is held;
		// a job whose lease is gone is refused by JobFinish below.
		j, err := s.store.JobGet(r.Context(), id)
		if errors.Is(err, job.ErrNotFound) {
			return job.ErrLeaseLost
		}
		if err != nil {
			return err
		}
		out.RetryDelay = s.cfg.RetryDelay(j.Queue, j.Attempt)
	}
	return s.workerFinish(w, r, out)
}

// workerRelease: POST /api/v1/worker/jobs/{id}/release {lease_token} →
// {state}: the job goes back to its queue at once, its attempt not
// counted (canceled instead when its cancel was requested), as the
// engine releases its jobs at shutdown.
func (s *server) workerRelease(w http.ResponseWriter, r *http.Request) error {
	id, err := workerJobID(r)
	if err != nil {
		return err
	}
	var req api.ReleaseRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	return s.workerFinish(w, r, store.Outcome{Lease: workerLease(r, id, req.LeaseToken), Status: store.OutcomeReleased})
}

// workerFinish applies a worker's outcome, fenced by its lease token, and
// counts it in the worker's record.
func (s *server) workerFinish(w http.ResponseWriter, r *http.Request, out store.Outcome) error {
	res, err := s.store.JobFinish(r.Context(), []store.Outcome{out})
	if err != nil {
		return err
	}
	s.finished(r.Context(), out, res[0])
	if res[0].Lost {
		return job.ErrLeaseLost
	}
	done, failed := 0, 0
	switch {
	case res[0].State == job.StateSucceeded:
		done = 1
	case out.Status != store.OutcomeReleased:
		failed = 1
	}
	if err := s.store.WorkerSeen(r.Context(), callingWorker(r).ID, "", done, failed); err != nil && !errors.Is(err, job.ErrNotFound) {
		s.log.Warn("count a worker's finished job", "worker", callingWorker(r).ID, "err", err)
	}
	return writeJSON(w, http.StatusOK, api.FinishResponse{State: api.State(res[0].State)})
}

// workerLease is the lease a worker's call names: the job, the token it
// presents and the calling worker as the owner, so that a worker holding
// another one's token still cannot write for it (409 lease-lost).
func workerLease(r *http.Request, id, token uuid.UUID) store.Lease {
	return store.Lease{ID: id, Token: token, Owner: callingWorker(r).ID}
}

func workerJobID(r *http.Request) (uuid.UUID, error) {
	if err := checkQuery(r); err != nil {
		return uuid.Nil, err
	}
	return pathID(r)
}
