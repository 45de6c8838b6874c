package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/problem"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// batchBody is the body of POST /api/v1/jobs/batch (api.SubmitBatchRequest),
// its jobs kept raw: each is decoded and checked on its own.
type batchBody struct {
	Jobs []json.RawMessage `json:"jobs"`
}

// submitBatch: POST /api/v1/jobs/batch {jobs: [SubmitRequest…]} → 200
// {jobs: [{status, id, state}…]}: 1 to api.MaxBatchJobs jobs, each
// checked as POST /api/v1/jobs checks one (its body, jobd's own names,
// the caller's queues, the store's rules), then inserted in one
// transaction. All or nothing: when one job is refused, none is
// inserted, and the answer is the first refusal's problem, naming the
// member as "jobs[i].member", with every refusal in items
// (api.SubmitBatchProblem).
func (s *server) submitBatch(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	var body batchBody
	if err := s.decodeOuter(w, r, &body); err != nil {
		return err
	}
	if len(body.Jobs) == 0 || len(body.Jobs) > api.MaxBatchJobs {
		return job.Invalid("jobs", "list 1 to %d jobs, got %d", api.MaxBatchJobs, len(body.Jobs))
	}
	params := make([]job.InsertParams, len(body.Jobs))
	var refused []api.SubmitBatchRefusal
	tp := r.Header.Get("traceparent")
	for i, raw := range body.Jobs {
		p, err := s.batchJob(r, raw)
		if err != nil {
			refused = append(refused, api.SubmitBatchRefusal{Index: i, Problem: *problem.FromError(err)})
			continue
		}
		if job.ValidTraceParent(tp) {
			p.TraceParent = tp
		}
		params[i] = p
	}
	if len(refused) > 0 {
		return writeBatchRefusal(w, refused)
	}
	res, err := s.store.JobInsertMany(r.Context(), params)
	var item *store.ItemError
	if errors.As(err, &item) && problem.FromError(item.Err).Status < http.StatusInternalServerError {
		return writeBatchRefusal(w, []api.SubmitBatchRefusal{{Index: item.Index, Problem: *problem.FromError(item.Err)}})
	}
	if err != nil {
		return err
	}
	out := api.SubmitBatchResponse{Jobs: make([]api.SubmitBatchItem, len(res))}
	for i, ins := range res {
		j := ins.Job
		switch {
		case !callerOf(r).Allows(j.Queue):
			// The idempotency key names a job of a queue the caller
			// cannot see: it learns nothing of it.
			out.Jobs[i] = api.SubmitBatchItem{Status: http.StatusConflict,
				Problem: problem.New(api.ProblemDuplicate, "idempotency_key", "the idempotency key is taken by a job this API key cannot see")}
		case ins.Created:
			out.Jobs[i] = api.SubmitBatchItem{Status: http.StatusCreated, ID: j.ID, State: api.State(j.State)}
			s.logTransition(r, "api: job queued", j)
		default:
			out.Jobs[i] = api.SubmitBatchItem{Status: http.StatusOK, ID: j.ID, State: api.State(j.State)}
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

// batchJob decodes and checks one job of a batch as POST /api/v1/jobs
// does one (decodeMember, then checkCallerJob). It writes nothing.
func (s *server) batchJob(r *http.Request, raw json.RawMessage) (job.InsertParams, error) {
	var b submitBody
	if err := decodeMember(raw, &b); err != nil {
		return job.InsertParams{}, err
	}
	return s.checkCallerJob(r, &b)
}

// decodeMember decodes one job of a request that holds several (a
// batch's, a workflow's task) strictly, 400 naming its member, and
// refuses text no store keeps (422).
func decodeMember(raw json.RawMessage, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeProblem(err)
	}
	return checkMembers(raw)
}

// checkCallerJob checks one job a caller submits as part of a request that
// holds several (a batch's job, a workflow's task), exactly as POST
// /api/v1/jobs checks one: its members (b.params), jobd's own names
// before the caller's queues (422, then 403), the store's rules (422).
// It returns the job's params, normalised, and writes nothing.
func (s *server) checkCallerJob(r *http.Request, b *submitBody) (job.InsertParams, error) {
	p, err := b.params()
	if err != nil {
		return p, err
	}
	if err := job.CheckCallerInsert(&p); err != nil {
		return p, err
	}
	if err := checkSubmitQueue(r, p.Queue); err != nil {
		return p, err
	}
	if err := s.checkInsert(&p); err != nil {
		return p, err
	}
	return p, nil
}

// decodeOuter reads a body that holds several jobs (POST
// /api/v1/jobs/batch, POST /api/v1/workflows) as decodeBody does, leaving
// each job's text raw, to be checked on its own (decodeMember).
func (s *server) decodeOuter(w http.ResponseWriter, r *http.Request, dst any) error {
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

// writeBatchRefusal answers a batch refused whole: the first refusal's
// problem, its field named within the batch ("jobs[3].queue"), with
// every refusal (api.SubmitBatchProblem).
func writeBatchRefusal(w http.ResponseWriter, refused []api.SubmitBatchRefusal) error {
	first := refused[0]
	doc := api.SubmitBatchProblem{Problem: first.Problem, Items: refused}
	doc.Field = fmt.Sprintf("jobs[%d]", first.Index)
	if first.Problem.Field != "" {
		doc.Field += "." + first.Problem.Field
	}
	doc.Detail = fmt.Sprintf("job %d of the batch: %s (no job of the batch was inserted)", first.Index, first.Problem.Detail)
	problem.WriteDocument(w, &doc.Problem, doc)
	return nil
}
