package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"os"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/apiconv"
	"github.com/jobd/jobd/internal/problem"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// submitBody mirrors api.SubmitRequest member for member (a test holds
// them equal) but takes times as strings, so that a bad value is
// answered naming its field (api.Duration's errors name theirs).
type submitBody struct {
	Queue          string          `json:"queue"`
	Kind           string          `json:"kind"`
	Args           json.RawMessage `json:"args"`
	Priority       *int            `json:"priority"`
	RunAt          *string         `json:"run_at"`
	MaxAttempts    *int            `json:"max_attempts"`
	LeaseTTL       *api.Duration   `json:"lease_ttl"`
	LockKey        string          `json:"lock_key"`
	PartitionKey   string          `json:"partition_key"`
	IdempotencyKey string          `json:"idempotency_key"`
	Unique         string          `json:"unique"`
	Requires       []string        `json:"requires"`
	Prefers        []string        `json:"prefers"`
	Timeout        *api.Duration   `json:"timeout"`
	CallbackURL    string          `json:"callback_url"`
}

func (b *submitBody) params() (job.InsertParams, error) {
	p := job.InsertParams{
		Queue: b.Queue, Kind: b.Kind, Args: b.Args, Priority: b.Priority,
		LockKey: b.LockKey, PartitionKey: b.PartitionKey,
		IdempotencyKey: b.IdempotencyKey, Unique: b.Unique,
		Requires: b.Requires, Prefers: b.Prefers, CallbackURL: b.CallbackURL,
	}
	if b.MaxAttempts != nil {
		// Sent, it is meant: 0 is not "the default" (job.InsertParams'
		// zero value is, for Go callers).
		if *b.MaxAttempts < 1 {
			return p, job.Invalid("max_attempts", "must be between 1 and %d, got %d", job.MaxMaxAttempts, *b.MaxAttempts)
		}
		p.MaxAttempts = *b.MaxAttempts
	}
	if b.RunAt != nil {
		t, err := parseTime("run_at", *b.RunAt)
		if err != nil {
			return p, err
		}
		p.RunAt = t
	}
	if b.LeaseTTL != nil {
		// Sent, it is meant: 0 is not "the default".
		if d := time.Duration(*b.LeaseTTL); d < time.Second {
			return p, job.Invalid("lease_ttl", "must be at least 1s, got %s", d)
		}
		p.LeaseTTL = time.Duration(*b.LeaseTTL)
	}
	if b.Timeout != nil {
		if d := time.Duration(*b.Timeout); d < time.Second {
			return p, job.Invalid("timeout", "must be at least 1s, got %s", d)
		}
		p.Timeout = time.Duration(*b.Timeout)
	}
	return p, nil
}

// parseTime reads an RFC 3339 time of field.
func parseTime(field, v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, badRequest(field, "%s must be an RFC 3339 time such as 2025-01-02T15:04:05Z, got %q", field, v)
	}
	return t, nil
}

// checkInsert validates a caller's p: it refuses the names jobd keeps for
// its own jobs (job.CheckCallerInsert, which every route that inserts a
// caller's jobs calls, a batch's too), then checks p as the store will
// (job.InsertParams.Normalize, filling defaults in p, refusing text no
// store keeps) plus integers beyond 32 bits. It writes nothing.
func (s *server) checkInsert(p *job.InsertParams) error {
	if err := job.CheckCallerInsert(p); err != nil {
		return err
	}
	if isJSONNull(p.Args) {
		p.Args = nil
	}
	if _, err := p.Normalize(s.cfg.MaxArgsBytes); err != nil {
		return err
	}
	if *p.Priority > math.MaxInt32 {
		return job.Invalid("priority", "must be at most %d", math.MaxInt32)
	}
	if p.MaxAttempts > math.MaxInt32 {
		return job.Invalid("max_attempts", "must be at most %d", math.MaxInt32)
	}
	return nil
}

func isJSONNull(raw json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// insert stores one job and reports whether it was created. Concurrent
// submissions are committed together (groupinsert): one transaction for
// the submissions that arrive while the database commits earlier ones.
func (s *server) insert(r *http.Request, p job.InsertParams) (store.InsertResult, error) {
	if err := s.checkInsert(&p); err != nil {
		return store.InsertResult{}, err
	}
	return s.inserts.Insert(r.Context(), p)
}

// submit: POST /api/v1/jobs. 201 with the new job, 200 with the existing
// one when the idempotency key or the active duplicate matched: in full
// to a caller who may read jobs, else only its id and state (replayOf).
func (s *server) submit(w http.ResponseWriter, r *http.Request) error {
	return s.create(w, r, &submitBody{}, func(j *job.Job, created bool) any {
		if !created && !callerOf(r).Grants(api.ScopeRead) {
			return replayOf(j)
		}
		return toAPIJob(j)
	})
}

// replayOf is the answer to a submission that matched an existing job
// (its idempotency key, or an active duplicate) for a caller without the
// read scope: the job's id and state, which that caller may learn of the
// job its request names, and none of what the job carries (its args,
// result, error, progress, checkpoint), which may be another caller's.
func replayOf(j *job.Job) api.JobReplay {
	return api.JobReplay{ID: j.ID, State: api.State(j.State)}
}

// submission is a request body that describes one job to create.
type submission interface {
	params() (job.InsertParams, error)
}

// create decodes body, inserts the job it describes and answers with
// render(job, created): 201 and a Location when the job is new, 200 when
// the idempotency key or the active duplicate matched an existing one.
func (s *server) create(w http.ResponseWriter, r *http.Request, body submission, render func(j *job.Job, created bool) any) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	if err := s.decodeBody(w, r, body); err != nil {
		return err
	}
	p, err := body.params()
	if err != nil {
		return err
	}
	// jobd's own names first: refused (422) whatever the credential, so
	// a queue-limited key learns the same as any other.
	if err := job.CheckCallerInsert(&p); err != nil {
		return err
	}
	if err := checkSubmitQueue(r, p.Queue); err != nil {
		return err
	}
	// The caller's trace, for the job's executions to join; a malformed
	// traceparent is ignored, as W3C Trace Context says.
	if tp := r.Header.Get("traceparent"); job.ValidTraceParent(tp) {
		p.TraceParent = tp
	}
	res, err := s.insert(r, p)
	if err != nil {
		return err
	}
	if !callerOf(r).Allows(res.Job.Queue) {
		// The idempotency key names a job of a queue the caller cannot
		// see: it learns nothing of it.
		return problem.Errorf(api.ProblemDuplicate, "idempotency_key", "the idempotency key is taken by a job this API key cannot see")
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
		w.Header().Set("Location", "/api/v1/jobs/"+res.Job.ID.String())
		s.logTransition(r, "api: job queued", res.Job)
	}
	return writeJSON(w, status, render(res.Job, res.Created))
}

// getJob: GET /api/v1/jobs/{id}[?wait=30s]. With wait, the answer is held
// until the job is final or the wait ends (at most MaxWait: a longer
// one is a 422 naming wait).
func (s *server) getJob(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r, "wait"); err != nil {
		return err
	}
	id, err := pathID(r)
	if err != nil {
		return err
	}
	wait, err := waitParam(r)
	if err != nil {
		return err
	}
	j, err := s.callerJob(r, id)
	if err != nil {
		return err
	}
	if wait > 0 && !j.State.Final() {
		holdOpen(w, wait+answerMargin) // beyond the server's write timeout
		if j, err = s.waitFinal(r, id, wait); err != nil {
			return err
		}
	}
	out := toAPIJob(j)
	steps, err := s.store.JobSteps(r.Context(), id)
	if err != nil {
		return err
	}
	out.Steps = apiconv.Steps(steps)
	return writeJSON(w, http.StatusOK, out)
}

// waitFinal re-reads the job every PollInterval until it is final, the
// wait ends or the caller goes away; it returns the last read.
func (s *server) waitFinal(r *http.Request, id uuid.UUID, wait time.Duration) (*job.Job, error) {
	deadline := s.clock.NewTimer(wait)
	defer deadline.Stop()
	tick := s.clock.NewTimer(s.cfg.PollInterval)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return nil, r.Context().Err()
		case <-deadline.C():
			return s.store.JobGet(r.Context(), id)
		case <-tick.C():
		}
		j, err := s.store.JobGet(r.Context(), id)
		if err != nil || j.State.Final() {
			return j, err
		}
		tick.Reset(s.cfg.PollInterval)
	}
}

// waitParam reads ?wait= (seconds or a Go duration, 0s to MaxWait).
func waitParam(r *http.Request) (time.Duration, error) {
	d, _, err := durationParam(r, "wait", MaxWait)
	return d, err
}

// cancel: POST /api/v1/jobs/{id}/cancel, scope cancel (or admin); a
// key limited to queues cancels only their jobs (callerJob).
func (s *server) cancel(w http.ResponseWriter, r *http.Request) error {
	return s.transition(w, r, "api: job canceled or its cancel requested", s.store.JobCancel)
}

// retry: POST /api/v1/jobs/{id}/retry.
func (s *server) retry(w http.ResponseWriter, r *http.Request) error {
	return s.transition(w, r, "api: job retried", s.store.JobRetry)
}

// rerun: POST /api/v1/jobs/{id}/rerun [{args}]: a finished job queued
// again, its result readable until the claim. The body is optional.
func (s *server) rerun(w http.ResponseWriter, r *http.Request) error {
	var req api.RerunRequest
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return problem.Errorf(api.ProblemTooLarge, "", "the request body is over the limit of %d bytes", tooLarge.Limit)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return errSlowBody
		}
		return badRequest("", "reading the request body: %v", err)
	}
	if len(bytes.TrimSpace(body)) > 0 {
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err := s.decodeBody(w, r, &req); err != nil {
			return err
		}
		if isJSONNull(req.Args) {
			req.Args = nil
		}
	}
	return s.transition(w, r, "api: job re-run", func(ctx context.Context, id uuid.UUID) (*job.Job, error) {
		if req.Args != nil {
			// New args are a caller's insert: none into jobd's own jobs.
			// (A job's queue and kind never change: read them first.)
			j, err := s.store.JobGet(ctx, id)
			if err != nil {
				return nil, err
			}
			if err := job.CheckCallerRerun(j); err != nil {
				return nil, err
			}
		}
		return s.store.JobRerun(ctx, id, store.RerunParams{Args: req.Args})
	})
}

func (s *server) transition(w http.ResponseWriter, r *http.Request, what string, apply func(ctx context.Context, id uuid.UUID) (*job.Job, error)) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	id, err := pathID(r)
	if err != nil {
		return err
	}
	if callerOf(r).Limited() {
		if _, err := s.callerJob(r, id); err != nil {
			return err
		}
	}
	j, err := apply(r.Context(), id)
	if err != nil {
		return err
	}
	s.logTransition(r, what, j)
	return writeJSON(w, http.StatusOK, toAPIJob(j))
}

// events: GET /api/v1/jobs/{id}/events, oldest first.
func (s *server) events(w http.ResponseWriter, r *http.Request) error {
	if err := checkQuery(r); err != nil {
		return err
	}
	id, err := pathID(r)
	if err != nil {
		return err
	}
	// The journal of an unknown job is empty; the job itself says 404.
	if _, err := s.callerJob(r, id); err != nil {
		return err
	}
	evs, err := s.store.JobEvents(r.Context(), id)
	if err != nil {
		return err
	}
	out := api.EventList{Events: make([]api.Event, 0, len(evs))}
	for _, e := range evs {
		out.Events = append(out.Events, toAPIEvent(e))
	}
	return writeJSON(w, http.StatusOK, out)
}

// pathID reads the {id} path segment.
func pathID(r *http.Request) (uuid.UUID, error) {
	v := r.PathValue("id")
	id, err := uuid.Parse(v)
	if err != nil {
		return uuid.Nil, badRequest("id", "id must be a UUID, got %q", v)
	}
	return id, nil
}
