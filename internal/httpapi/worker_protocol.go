package httpapi

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/engine"
	"github.com/jobd/jobd/internal/apiconv"
	"github.com/jobd/jobd/internal/remote"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// The worker routes decode a remote worker's request, hand it to the
// remote.Service, which holds the protocol's rules, and encode its
// answer (docs/worker-protocol.md).

// workerHeartbeat: POST /api/v1/worker/heartbeat {status, leases} →
// {leases: [{id, held, cancel_requested}]}: keeps the worker online and
// extends the leases it still holds, in one batch.
func (s *server) workerHeartbeat(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	var req heartbeatBody
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	leases := make([]store.Lease, len(req.Leases))
	for i, l := range req.Leases {
		leases[i] = store.Lease{ID: uuid.UUID(l.ID), Token: uuid.UUID(l.LeaseToken)}
	}
	res, err := s.remote.Heartbeat(r.Context(), callingWorker(r), store.WorkerStatus(req.Status), leases)
	if err != nil {
		return err
	}
	out := api.HeartbeatResponse{Leases: make([]api.LeaseState, len(res))}
	for i, h := range res {
		out.Leases[i] = api.LeaseState{ID: leases[i].ID, Held: h.Held, CancelRequested: h.CancelRequested}
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
	return writeJSON(w, http.StatusOK, s.claimResponse(jobs))
}

// claimResponse shows claimed jobs with their leases and the heartbeat
// interval the server advises for each (remote.Service.HeartbeatAdvice).
func (s *server) claimResponse(jobs []*job.Job) api.ClaimResponse {
	out := api.ClaimResponse{Jobs: make([]api.ClaimedJob, len(jobs))}
	for i, j := range jobs {
		out.Jobs[i] = api.ClaimedJob{Job: toAPIJob(j), LeaseToken: j.LeaseToken,
			HeartbeatIntervalSeconds: api.Seconds(s.remote.HeartbeatAdvice(j.LeaseTTL)), Inputs: toAPIInputs(j.Inputs)}
		apiconv.Resume(j.Resume, &out.Jobs[i])
	}
	return out
}

// workerProgress: POST /api/v1/worker/jobs/{id}/progress → {cancel_requested}.
func (s *server) workerProgress(w http.ResponseWriter, r *http.Request) error {
	id, err := workerJobID(r)
	if err != nil {
		return err
	}
	var req progressBody
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	lease, err := workerLease(r, id, req.LeaseToken)
	if err != nil {
		return err
	}
	p := job.Progress{Phase: req.Phase, Done: req.Done, Total: req.Total, Items: req.Items}
	cancel, err := s.remote.Progress(r.Context(), lease, p)
	if err != nil { // job.ErrLeaseLost is answered 409 lease-lost
		return err
	}
	return writeJSON(w, http.StatusOK, api.ProgressResponse{CancelRequested: cancel})
}

// workerCheckpoint: POST /api/v1/worker/jobs/{id}/checkpoint →
// {cancel_requested}.
func (s *server) workerCheckpoint(w http.ResponseWriter, r *http.Request) error {
	id, err := workerJobID(r)
	if err != nil {
		return err
	}
	var req checkpointBody
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	lease, err := workerLease(r, id, req.LeaseToken)
	if err != nil {
		return err
	}
	cancel, err := s.remote.Checkpoint(r.Context(), lease, req.Checkpoint)
	if err != nil { // job.ErrLeaseLost is answered 409 lease-lost
		return err
	}
	return writeJSON(w, http.StatusOK, api.CheckpointResponse{CancelRequested: cancel})
}

// workerComplete: POST /api/v1/worker/jobs/{id}/complete {lease_token,
// result} → {state}.
func (s *server) workerComplete(w http.ResponseWriter, r *http.Request) error {
	id, err := workerJobID(r)
	if err != nil {
		return err
	}
	var req completeBody
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	lease, err := workerLease(r, id, req.LeaseToken)
	if err != nil {
		return err
	}
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
	var req failBody
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	lease, err := workerLease(r, id, req.LeaseToken)
	if err != nil {
		return err
	}
	f := remote.Failure{Error: req.Error, Retryable: req.Retryable,
		RetryAfter: durationPtr(req.RetryAfter), Throttle: durationPtr(req.Throttle)}
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
	var req releaseBody
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	lease, err := workerLease(r, id, req.LeaseToken)
	if err != nil {
		return err
	}
	res, err := s.remote.Release(r.Context(), callingWorker(r), lease)
	return s.finishAnswer(w, r, lease, store.OutcomeReleased, res, err)
}

// finishAnswer logs an outcome the service applied, or refused, and
// answers it: 200 with the state, and repeat for a repeat.
func (s *server) finishAnswer(w http.ResponseWriter, r *http.Request, lease store.Lease, status store.OutcomeStatus, res store.FinishResult, err error) error {
	s.logOutcome(r, lease.ID, status, res, err)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.FinishResponse{State: api.State(res.State), Repeat: res.Repeat})
}

// logOutcome logs, at debug, a remote worker's outcome.
func (s *server) logOutcome(r *http.Request, id uuid.UUID, status store.OutcomeStatus, res store.FinishResult, err error) {
	if s.log.Enabled(r.Context(), slog.LevelDebug) && (err == nil || res.Lost) {
		s.log.DebugContext(r.Context(), "api: a remote worker's outcome", "job_id", id, "outcome", status,
			"lost", res.Lost, "repeat", res.Repeat, "state", res.State, "request_id", RequestID(r.Context()))
	}
}

// durationPtr is *d as a time.Duration, nil for nil.
func durationPtr(d *api.Duration) *time.Duration {
	if d == nil {
		return nil
	}
	v := time.Duration(*d)
	return &v
}

// workerLease is the lease a worker's call names (remote.LeaseOf): a
// missing token is a 422 naming lease_token.
func workerLease(r *http.Request, id uuid.UUID, token *uuidArg) (store.Lease, error) {
	t, err := leaseToken(token)
	if err != nil {
		return store.Lease{}, err
	}
	return remote.LeaseOf(callingWorker(r), id, t), nil
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
