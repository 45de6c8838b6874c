package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/apiconv"
	"github.com/jobd/jobd/internal/problem"
	"github.com/jobd/jobd/job"
)

// Durable execution's routes (docs/steps-and-children.md): a remote
// worker's steps, children and waits, fenced by its lease like every
// worker write, and an operator's signal.

// stepBody mirrors api.StepRequest.
type stepBody struct {
	LeaseToken *uuidArg        `json:"lease_token"`
	Name       string          `json:"name"`
	Result     json.RawMessage `json:"result"`
	StartedAt  *time.Time      `json:"started_at"`
}

// childrenBody mirrors api.ChildrenRequest.
type childrenBody struct {
	LeaseToken *uuidArg          `json:"lease_token"`
	Children   []json.RawMessage `json:"children"`
}

// waitBody mirrors api.WaitRequest.
type waitBody struct {
	LeaseToken *uuidArg      `json:"lease_token"`
	For        string        `json:"for"`
	Signal     string        `json:"signal"`
	Timeout    *api.Duration `json:"timeout"`
	Until      *string       `json:"until"`
}

// signalBody mirrors api.SignalRequest.
type signalBody struct {
	Name    string          `json:"name"`
	Payload json.RawMessage `json:"payload"`
}

// childBody is one child of a spawn: a submission with its key.
type childBody struct {
	Key string `json:"key"`
	submitBody
}

// workerStep: POST /api/v1/worker/jobs/{id}/steps {lease_token, name,
// result, started_at} → {step, recorded, cancel_requested}.
func (s *server) workerStep(w http.ResponseWriter, r *http.Request) error {
	id, err := workerJobID(r)
	if err != nil {
		return err
	}
	var req stepBody
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	lease, err := workerLease(r, id, req.LeaseToken)
	if err != nil {
		return err
	}
	if req.Name == "" {
		return job.Invalid("name", "is required")
	}
	var started time.Time
	if req.StartedAt != nil {
		started = *req.StartedAt
	}
	res, err := s.remote.Step(r.Context(), lease, req.Name, req.Result, started)
	if err != nil { // job.ErrLeaseLost is answered 409 lease-lost
		return err
	}
	return writeJSON(w, http.StatusOK, api.StepResponse{Step: apiconv.Step(res.Step), Recorded: res.Recorded,
		CancelRequested: res.CancelRequested})
}

// workerChildren: POST /api/v1/worker/jobs/{id}/children {lease_token,
// children: [{key, …a job submission}]} → {children: [{key, id, state,
// created}]}. Each child is checked as POST /api/v1/jobs checks a job
// (jobd's reserved names, the store's rules) and held to the worker's
// queues (POST /api/v1/workers' queues: 403 naming its queue),
// its problems naming children[i].field; all are spawned, or none.
func (s *server) workerChildren(w http.ResponseWriter, r *http.Request) error {
	id, err := workerJobID(r)
	if err != nil {
		return err
	}
	var req childrenBody
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	lease, err := workerLease(r, id, req.LeaseToken)
	if err != nil {
		return err
	}
	if len(req.Children) == 0 {
		return job.Invalid("children", "must hold at least one child")
	}
	children := make([]job.ChildParams, len(req.Children))
	for i, raw := range req.Children {
		c, err := s.childParams(r, raw)
		if err != nil {
			return inChild(i, err)
		}
		children[i] = c
	}
	res, err := s.remote.Spawn(r.Context(), lease, children)
	if err != nil {
		return err
	}
	out := api.ChildrenResponse{Children: make([]api.SpawnedChild, len(res))}
	for i, c := range res {
		out.Children[i] = api.SpawnedChild{Key: children[i].Key, ID: c.Job.ID, State: api.State(c.Job.State), Created: c.Created}
		if c.Created {
			s.logTransition(r, "api: child queued", c.Job)
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

// childParams decodes and checks one child as batchJob does a job.
func (s *server) childParams(r *http.Request, raw json.RawMessage) (job.ChildParams, error) {
	var b childBody
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return job.ChildParams{}, decodeProblem(err)
	}
	if err := checkMembers(raw); err != nil {
		return job.ChildParams{}, err
	}
	if b.Key == "" {
		return job.ChildParams{}, job.Invalid("key", "is required")
	}
	p, err := b.params()
	if err != nil {
		return job.ChildParams{}, err
	}
	if err := job.CheckCallerInsert(&p); err != nil {
		return job.ChildParams{}, err
	}
	if err := checkSubmitQueue(r, p.Queue); err != nil {
		return job.ChildParams{}, err
	}
	if err := s.checkInsert(&p); err != nil {
		return job.ChildParams{}, err
	}
	// The worker's queues bound what it spawns as they bound what it
	// claims.
	if wk := callingWorker(r); wk != nil && !wk.Queues.Allows(p.Queue) {
		return job.ChildParams{}, problem.Errorf(api.ProblemForbidden, "queue",
			"worker %s may use only the queues %s, not %q", wk.ID, strings.Join(wk.Queues, ", "), p.Queue)
	}
	return job.ChildParams{Key: b.Key, InsertParams: p}, nil
}

// inChild makes err, a problem of a child's field, name that field of
// children[i].
func inChild(i int, err error) error {
	prefix := fmt.Sprintf("children[%d]", i)
	var ve *job.ValidationError
	if errors.As(err, &ve) {
		return &job.ValidationError{Field: joinField(prefix, ve.Field), Reason: ve.Reason}
	}
	var pe *problem.Error
	if errors.As(err, &pe) {
		return &problem.Error{Type: pe.Type, Field: joinField(prefix, pe.Field), Detail: pe.Detail}
	}
	return fmt.Errorf("%s: %w", prefix, err)
}

func joinField(prefix, field string) string {
	if field == "" {
		return prefix
	}
	return prefix + "." + field
}

// workerWait: POST /api/v1/worker/jobs/{id}/wait {lease_token, for,
// signal, timeout, until} → {state, run_at}: the attempt ends waiting.
func (s *server) workerWait(w http.ResponseWriter, r *http.Request) error {
	id, err := workerJobID(r)
	if err != nil {
		return err
	}
	var req waitBody
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	lease, err := workerLease(r, id, req.LeaseToken)
	if err != nil {
		return err
	}
	wr := job.WaitRequest{For: job.WaitFor(req.For), Signal: req.Signal}
	if req.Timeout != nil {
		wr.Timeout = time.Duration(*req.Timeout)
	}
	if req.Until != nil {
		if wr.Until, err = parseTime("until", *req.Until); err != nil {
			return err
		}
		if wr.For == "" {
			wr.For = job.WaitUntil
		}
	}
	if wr.For == job.WaitUntil && req.Until == nil {
		return job.Invalid("until", "is required")
	}
	if err := wr.Check(); err != nil {
		return err
	}
	j, err := s.remote.Wait(r.Context(), lease, wr)
	if err != nil {
		return err
	}
	s.logTransition(r, "api: job waits", j)
	return writeJSON(w, http.StatusOK, api.WaitResponse{State: api.State(j.State), RunAt: j.RunAt.UTC()})
}

// signal: POST /api/v1/jobs/{id}/signal {name, payload} → {delivered,
// job}: allowed to whoever may cancel the job (the cancel scope, within
// the key's queues).
func (s *server) signal(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	id, err := pathID(r)
	if err != nil {
		return err
	}
	var req signalBody
	if err := s.decodeBody(w, r, &req); err != nil {
		return err
	}
	if callerOf(r).Limited() {
		if _, err := s.callerJob(r, id); err != nil {
			return err
		}
	}
	if isJSONNull(req.Payload) {
		req.Payload = nil
	}
	res, err := s.store.JobSignal(r.Context(), id, req.Name, req.Payload)
	if err != nil {
		return err
	}
	s.logTransition(r, "api: job signaled", res.Job)
	return writeJSON(w, http.StatusOK, api.SignalResponse{Delivered: res.Delivered, Job: toAPIJob(res.Job)})
}
