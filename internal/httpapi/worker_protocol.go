package httpapi

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/internal/remote"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// The worker routes decode a remote worker's request, hand it to the
// remote.Service, which holds the protocol's rules, and encode its
// answer.

// workerHeartbeat: POST /api/v1/worker/heartbeat {status, leases} →
// {leases: [{id, held, cancel_requested}]}: keeps the worker online and
// extends the leases it still holds, in one batch.
func (s *server) workerHeartbeat(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	var req api.HeartbeatRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	leases := make([]store.Lease, len(req.Leases))
	for i, l := range req.Leases {
		leases[i] = store.Lease{ID: l.ID, Token: l.LeaseToken}
	}
	res, err := s.remote.Heartbeat(r.Context(), callingWorker(r), store.WorkerStatus(req.Status), leases)
	if err != nil {
		return err
	}
	out := api.HeartbeatResponse{Leases: make([]api.LeaseState, len(res))}
	for i, h := range res {
		out.Leases[i] = api.LeaseState{ID: req.Leases[i].ID, Held: h.Held, CancelRequested: h.CancelRequested}
	}
	return writeJSON(w, http.StatusOK, out)
}

// workerClaim: POST /api/v1/worker/claim {queues, max, wait} → {jobs},
// long-polling up to wait (remote.Service.Claim).
func (s *server) workerClaim(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	wk := callingWorker(r)
	var req api.ClaimRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	c := remote.Claim{Queues: req.Queues, Max: req.Max, Wait: time.Duration(req.Wait)}
	if err := c.Check(wk); err != nil {
		return err
	}
	if c.Wait > 0 {
		holdOpen(w, c.Wait+answerMargin) // beyond the server's write timeout
	}
	jobs, err := s.remote.Claim(r.Context(), wk, c)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		s.logTransition(r, "api: job claimed by a remote worker", j)
	}
	return writeJSON(w, http.StatusOK, claimResponse(jobs))
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
	cancel, err := s.remote.Progress(r.Context(), workerLease(r, id, req.LeaseToken), p)
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
	if err := s.remote.Checkpoint(r.Context(), workerLease(r, id, req.LeaseToken), req.Checkpoint); err != nil {
		return err // job.ErrLeaseLost is answered 409 lease-lost
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
	lease := workerLease(r, id, req.LeaseToken)
	res, err := s.remote.Complete(r.Context(), callingWorker(r), lease, req.Result)
	return s.finishAnswer(w, r, lease, store.OutcomeSucceeded, res, err)
}

// workerFail: POST /api/v1/worker/jobs/{id}/fail {lease_token, error,
// retryable, retry_after, throttle} → {state} (remote.Failure).
func (s *server) workerFail(w http.ResponseWriter, r *http.Request) error {
	id, err := workerJobID(r)
	if err != nil {
		return err
	}
	var req api.FailRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	f := remote.Failure{Error: req.Error, Retryable: req.Retryable}
	if req.RetryAfter != nil {
		d := time.Duration(*req.RetryAfter)
		f.RetryAfter = &d
	}
	if req.Throttle != nil {
		d := time.Duration(*req.Throttle)
		f.Throttle = &d
	}
	lease := workerLease(r, id, req.LeaseToken)
	res, err := s.remote.Fail(r.Context(), callingWorker(r), lease, f)
	return s.finishAnswer(w, r, lease, store.OutcomeFailed, res, err)
}

// workerRelease: POST /api/v1/worker/jobs/{id}/release {lease_token} →
// {state}: the job goes back to its queue at once, its attempt not
// counted (canceled instead when its cancel was requested).
func (s *server) workerRelease(w http.ResponseWriter, r *http.Request) error {
	id, err := workerJobID(r)
	if err != nil {
		return err
	}
	var req api.ReleaseRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	lease := workerLease(r, id, req.LeaseToken)
	res, err := s.remote.Release(r.Context(), callingWorker(r), lease)
	return s.finishAnswer(w, r, lease, store.OutcomeReleased, res, err)
}

// finishAnswer logs an outcome the service applied, or refused, and
// answers it.
func (s *server) finishAnswer(w http.ResponseWriter, r *http.Request, lease store.Lease, status store.OutcomeStatus, res store.FinishResult, err error) error {
	if s.log.Enabled(r.Context(), slog.LevelDebug) && (err == nil || res.Lost) {
		s.log.DebugContext(r.Context(), "api: a remote worker's outcome", "job_id", lease.ID, "outcome", status,
			"lost", res.Lost, "state", res.State, "request_id", RequestID(r.Context()))
	}
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.FinishResponse{State: api.State(res.State)})
}

// workerLease is the lease a worker's call names (remote.LeaseOf).
func workerLease(r *http.Request, id, token uuid.UUID) store.Lease {
	return remote.LeaseOf(callingWorker(r), id, token)
}

func workerJobID(r *http.Request) (uuid.UUID, error) {
	if err := checkQuery(r); err != nil {
		return uuid.Nil, err
	}
	return pathID(r)
}

// defaultPolicy is the remote workers' policy of an API without an
// engine (Config.Remote nil): the default backoff, no default timeout,
// no pacing, and no wake-ups (a long-polling claim claims again each
// second and when its wait ends).
type defaultPolicy struct{}

func (defaultPolicy) RetryDelay(_ string, attempt int) time.Duration {
	return engine.DefaultBackoff.Delay(attempt, nil)
}
func (defaultPolicy) QueueTimeout(string) time.Duration                 { return 0 }
func (defaultPolicy) ClaimPace(string) time.Duration                    { return 0 }
func (defaultPolicy) Subscribe(func(queue string)) (unsubscribe func()) { return func() {} }

var _ remote.Policy = defaultPolicy{}
