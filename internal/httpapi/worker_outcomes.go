package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/problem"
	"github.com/jobd/jobd/internal/remote"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// workerOutcomes: POST /api/v1/worker/outcomes {outcomes: [{id,
// lease_token, outcome, ...}]} → 200 {outcomes: [{id, status, state |
// problem}]}: up to api.MaxOutcomes outcomes applied in one store call
// (remote.Service.Finish), each answered as its own route would answer
// it alone, in the request's order. An item that is malformed or breaks
// a rule is answered alone (400 or 422 naming its member) and the others
// are applied.
func (s *server) workerOutcomes(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	var req outcomesBody
	if err := s.decodeOutcomes(w, r, &req); err != nil {
		return err
	}
	if len(req.Outcomes) == 0 || len(req.Outcomes) > api.MaxOutcomes {
		return job.Invalid("outcomes", "list 1 to %d outcomes, got %d", api.MaxOutcomes, len(req.Outcomes))
	}
	wk := callingWorker(r)
	answers := make([]api.OutcomeAnswer, len(req.Outcomes))
	outcomes := make([]remote.Outcome, 0, len(req.Outcomes))
	index := make([]int, 0, len(req.Outcomes))
	for i, raw := range req.Outcomes {
		o, id, err := outcomeOf(raw)
		answers[i].ID = id
		if err != nil {
			s.refuse(r, &answers[i], err)
			continue
		}
		o.Lease.Owner = wk.ID
		outcomes = append(outcomes, o)
		index = append(index, i)
	}
	res, err := s.remote.Finish(r.Context(), wk, outcomes)
	if err != nil {
		return err
	}
	for k, a := range res {
		i := index[k]
		s.logOutcome(r, outcomes[k].Lease.ID, outcomes[k].Status, a.FinishResult, a.Err)
		if a.Err != nil {
			s.refuse(r, &answers[i], a.Err)
			continue
		}
		answers[i].Status, answers[i].State, answers[i].Repeat = http.StatusOK, api.State(a.State), a.Repeat
	}
	return writeJSON(w, http.StatusOK, api.OutcomesResponse{Outcomes: answers})
}

// decodeOutcomes reads the body of POST /api/v1/worker/outcomes as
// decodeBody does, but leaves the text of its items to be checked each
// on its own (outcomeOf), so that one item's text no store keeps refuses
// that item alone.
func (s *server) decodeOutcomes(w http.ResponseWriter, r *http.Request, dst *outcomesBody) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeProblem(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return badRequest("", "the request body holds more than one JSON value")
	}
	return nil
}

// refuse makes a an outcome's refusal: the problem its route would have
// answered alone (an internal error's cause goes to the log only).
func (s *server) refuse(r *http.Request, a *api.OutcomeAnswer, err error) {
	p := problem.FromError(err)
	if p.Status >= http.StatusInternalServerError {
		s.log.ErrorContext(r.Context(), "a remote worker's outcome failed", "job_id", a.ID, "err", err,
			"request_id", RequestID(r.Context()))
	}
	a.Status, a.Problem = p.Status, p
}

// outcomeOf decodes one item of POST /api/v1/worker/outcomes, strictly,
// and checks it: a 400 naming its member when it is malformed, a 422
// when it breaks a rule (the member of another outcome, text no store
// keeps, a missing id or lease_token). The id is the item's, when it
// could be read.
func outcomeOf(raw json.RawMessage) (remote.Outcome, uuid.UUID, error) {
	var b outcomeBody
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		// Name the item's job in its answer when its id can be read.
		var named struct {
			ID uuidArg `json:"id"`
		}
		_ = json.Unmarshal(raw, &named)
		return remote.Outcome{}, uuid.UUID(named.ID), decodeProblem(err)
	}
	var id uuid.UUID
	if b.ID != nil {
		id = uuid.UUID(*b.ID)
	}
	if err := checkMembers(raw); err != nil {
		return remote.Outcome{}, id, err
	}
	if id == uuid.Nil {
		return remote.Outcome{}, id, job.Invalid("id", "is required: the id of the job claimed")
	}
	token, err := leaseToken(b.LeaseToken)
	if err != nil {
		return remote.Outcome{}, id, err
	}
	o := remote.Outcome{Lease: store.Lease{ID: id, Token: token}}
	failure := map[string]bool{"error": b.Error != nil, "retryable": b.Retryable != nil,
		"retry_after": b.RetryAfter != nil, "throttle": b.Throttle != nil}
	switch b.Outcome {
	case api.OutcomeComplete:
		o.Status, o.Result = store.OutcomeSucceeded, b.Result
	case api.OutcomeRelease:
		o.Status = store.OutcomeReleased
	case api.OutcomeFail:
		if b.Result != nil {
			return o, id, job.Invalid("result", "is a member of a complete outcome, not of fail")
		}
		o.Status = store.OutcomeFailed
		o.Failure = remote.Failure{RetryAfter: durationPtr(b.RetryAfter), Throttle: durationPtr(b.Throttle)}
		if b.Error != nil {
			o.Failure.Error = *b.Error
		}
		if b.Retryable != nil {
			o.Failure.Retryable = *b.Retryable
		}
		return o, id, nil
	case "":
		return o, id, job.Invalid("outcome", "is required: complete, fail or release")
	default:
		return o, id, job.Invalid("outcome", "must be complete, fail or release, got %q", b.Outcome)
	}
	for _, name := range []string{"error", "retryable", "retry_after", "throttle"} {
		if failure[name] {
			return o, id, job.Invalid(name, "is a member of a fail outcome, not of %s", b.Outcome)
		}
	}
	if b.Result != nil && b.Outcome != api.OutcomeComplete {
		return o, id, job.Invalid("result", "is a member of a complete outcome, not of %s", b.Outcome)
	}
	return o, id, nil
}
