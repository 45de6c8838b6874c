package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/api"
	"github.com/jobd/jobd/internal/problem"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/observe"
	"github.com/jobd/jobd/process"
	"github.com/jobd/jobd/store"
)

// Durable process routes (/api/v1/processes/...), served when
// Config.Processes is set.
const (
	// DefaultProcessWait is how long init, call and repair wait for their
	// task when ?timeout= is not given; MaxProcessWait caps ?timeout=.
	DefaultProcessWait = 30 * time.Second
	MaxProcessWait     = 5 * time.Minute
	// DefaultHistoryLimit is how many of the last events GET returns.
	DefaultHistoryLimit = 100
	maxProcessPage      = 1000
)

// viewOf is a process on the wire.
func viewOf(p *store.Process) *api.Process {
	v := &api.Process{
		Namespace: p.Namespace, ID: p.ID, Status: api.ProcessStatus(p.Status), Detail: p.Detail,
		AuxState: nullIfEmpty(p.AuxState), Metadata: nullIfEmpty(p.Metadata),
		LastEventID: p.LastEventID, CreatedAt: p.CreatedAt.UTC(), UpdatedAt: p.UpdatedAt.UTC(),
	}
	if p.TimerAt != nil {
		v.Timer = &api.ProcessTimer{At: p.TimerAt.UTC(), TaskID: p.TimerJob}
	}
	for _, e := range p.History {
		v.History = append(v.History, api.ProcessEvent{EventID: e.EventID, Timestamp: e.At.UTC(), Payload: e.Payload})
	}
	return v
}

func nullIfEmpty(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

// processes returns the runner or a 404 when processes are not configured.
func (s *server) processes(r *http.Request) (*process.Runner, error) {
	ns := r.PathValue("ns")
	if s.cfg.Processes == nil || !s.cfg.Processes.Has(ns) {
		return nil, problem.Errorf(api.ProblemNotFound, "ns", "no process namespace %q on this server (jobd serve --processors)", ns)
	}
	return s.cfg.Processes, nil
}

// processID reads the {id} of a process route: text every store keeps
// (valid UTF-8 without NUL), short enough for the lock key of its tasks
// (process.LockKey) to fit job.MaxKeyBytes.
func processID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	limit := job.MaxKeyBytes - len(process.LockKey(r.PathValue("ns"), ""))
	if id == "" || len(id) > limit || job.CheckText("id", id) != nil {
		return "", badRequest("id", "a process id is 1 to %d bytes of UTF-8 without NUL", limit)
	}
	return id, nil
}

// initProcess: POST /api/v1/processes/{ns}/{id}.
func (s *server) initProcess(w http.ResponseWriter, r *http.Request) error {
	return s.runTask(w, r, process.TaskInit, http.StatusCreated)
}

// callProcess: POST /api/v1/processes/{ns}/{id}/call.
func (s *server) callProcess(w http.ResponseWriter, r *http.Request) error {
	return s.runTask(w, r, process.TaskCall, http.StatusOK)
}

// repairProcess: POST /api/v1/processes/{ns}/{id}/repair.
func (s *server) repairProcess(w http.ResponseWriter, r *http.Request) error {
	return s.runTask(w, r, process.TaskRepair, http.StatusOK)
}

// runTask submits a task (its Idempotency-Key header, when given, makes a
// retry wait for the first task instead of a new one), waits for it up to
// ?timeout= and answers its outcome: ok with the response and the process
// as it is after the task (later tasks may already have run), 409 for a
// process that exists (init), is in error (call) or is not (repair), 404
// for no process, 502 when the processor failed (the process is then in
// error), 504 with the task id when the task is still queued or running.
func (s *server) runTask(w http.ResponseWriter, r *http.Request, task process.Task, ok int) error {
	if err := checkQuery(r, "timeout"); err != nil {
		return err
	}
	wait, given, err := durationParam(r, "timeout", MaxProcessWait)
	if err != nil {
		return err
	}
	if !given {
		wait = DefaultProcessWait
	}
	runner, err := s.processes(r)
	if err != nil {
		return err
	}
	ns := r.PathValue("ns")
	id, err := processID(r)
	if err != nil {
		return err
	}
	key := r.Header.Get("Idempotency-Key")
	if limit := job.MaxKeyBytes - len(process.LockKey(ns, id)+":"); key != "" && (len(key) > limit || job.CheckText("Idempotency-Key", key) != nil) {
		return badRequest("Idempotency-Key", "Idempotency-Key must be UTF-8 of at most %d bytes for this process", limit)
	}
	var body api.ProcessTaskRequest
	if r.ContentLength != 0 {
		if err := s.decodeBody(w, r, &body); err != nil {
			return err
		}
	}
	j, err := runner.Submit(r.Context(), ns, id, task, body.Args, key)
	if errors.Is(err, job.ErrIdempotencyMismatch) {
		return problem.Errorf(api.ProblemIdempotencyMismatch, "Idempotency-Key",
			"this Idempotency-Key was used before with a different request of this process (another task or other args); send the same request again, or use a new key")
	}
	if err != nil {
		return err
	}
	if !j.State.Final() {
		holdOpen(w, wait+answerMargin) // beyond the server's write timeout
		if j, err = s.waitTask(r, j.ID, wait); err != nil {
			return err
		}
		if j.FinishedAt != nil {
			// How long after the task ended its caller learned of it.
			s.obs.Process.ProcessStage(observe.StageNotification, max(s.clock.Now().Sub(*j.FinishedAt), 0))
		}
	}
	if !j.State.Final() {
		doc := api.ProcessTaskTimeout{
			Problem: *problem.New(api.ProblemTaskTimeout, "",
				fmt.Sprintf("task %s is still %s; it is not lost: read its outcome at /api/v1/jobs/%s", j.ID, j.State, j.ID)),
			TaskID: j.ID, State: api.State(j.State),
		}
		problem.WriteDocument(w, &doc.Problem, doc)
		return nil
	}
	resp, err := process.Outcome(j)
	if err != nil {
		return err // a refusal or a processor failure (internal/problem maps them)
	}
	ans := api.ProcessTaskAnswer{TaskID: j.ID, Response: nullIfEmpty(resp)}
	p, err := s.store.ProcessGet(r.Context(), ns, id, store.HistoryPage{After: -1, Limit: DefaultHistoryLimit})
	switch {
	case err == nil:
		ans.Process = viewOf(p)
	case !errors.Is(err, job.ErrNotFound):
		return err
	}
	return writeJSON(w, ok, ans)
}

// waitTask re-reads a task job until it is final, the wait ends or the
// caller goes away, polling quickly at first (a task often takes
// milliseconds) and then every PollInterval.
func (s *server) waitTask(r *http.Request, id uuid.UUID, wait time.Duration) (*job.Job, error) {
	deadline := s.clock.NewTimer(wait)
	defer deadline.Stop()
	every := min(2*time.Millisecond, s.cfg.PollInterval)
	tick := s.clock.NewTimer(every)
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
		every = min(2*every, s.cfg.PollInterval)
		tick.Reset(every)
	}
}

// getProcess: GET /api/v1/processes/{ns}/{id}[?history_after=N&history_limit=M].
// The history is the events after N, oldest first, at most M; without
// history_after, the last M (default 100).
func (s *server) getProcess(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r, "history_after", "history_limit")
	if err != nil {
		return err
	}
	page := store.HistoryPage{After: -1, Limit: DefaultHistoryLimit}
	if v := q.Get("history_after"); v != "" {
		if page.After, err = strconv.ParseInt(v, 10, 64); err != nil || page.After < 0 {
			return badRequest("history_after", "history_after must be an event id (>= 0), got %q", v)
		}
	}
	if v := q.Get("history_limit"); v != "" {
		if page.Limit, err = strconv.Atoi(v); err != nil || page.Limit < 0 || page.Limit > maxProcessPage {
			return badRequest("history_limit", "history_limit must be 0..%d, got %q", maxProcessPage, v)
		}
	}
	if _, err := s.processes(r); err != nil {
		return err
	}
	id, err := processID(r)
	if err != nil {
		return err
	}
	p, err := s.store.ProcessGet(r.Context(), r.PathValue("ns"), id, page)
	if err != nil {
		return err
	}
	v := viewOf(p)
	if v.History == nil {
		v.History = []api.ProcessEvent{}
	}
	return writeJSON(w, http.StatusOK, v)
}

// deleteProcess: DELETE /api/v1/processes/{ns}/{id}. It removes the
// process, its history and its pending timer; 204.
func (s *server) deleteProcess(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.processes(r); err != nil {
		return err
	}
	id, err := processID(r)
	if err != nil {
		return err
	}
	began := s.clock.Now()
	err = s.store.ProcessDelete(r.Context(), r.PathValue("ns"), id)
	s.obs.Process.ProcessStage(observe.StageProcessRemoving, s.since(began))
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// listProcesses: GET /api/v1/processes/{ns}[?status=&after=&limit=],
// ordered by id, without history; X-Total-Count counts every match.
func (s *server) listProcesses(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r, "status", "after", "limit")
	if err != nil {
		return err
	}
	params := store.ProcessListParams{Namespace: r.PathValue("ns"), After: q.Get("after"), Limit: DefaultHistoryLimit}
	if err := job.CheckText("after", params.After); err != nil {
		return badRequest("after", "after must be a process id: UTF-8 without NUL")
	}
	switch st := store.ProcessStatus(q.Get("status")); st {
	case "", store.ProcessRunning, store.ProcessError:
		params.Status = st
	default:
		return badRequest("status", "status must be running or error, got %q", st)
	}
	if v := q.Get("limit"); v != "" {
		if params.Limit, err = strconv.Atoi(v); err != nil || params.Limit < 0 || params.Limit > maxProcessPage {
			return badRequest("limit", "limit must be 0..%d, got %q", maxProcessPage, v)
		}
	}
	if _, err := s.processes(r); err != nil {
		return err
	}
	ps, total, err := s.store.ProcessList(r.Context(), params)
	if err != nil {
		return err
	}
	out := api.ProcessList{Processes: make([]api.Process, 0, len(ps)), Total: total}
	for i := range ps {
		out.Processes = append(out.Processes, *viewOf(&ps[i]))
	}
	if params.Limit > 0 && len(ps) == params.Limit {
		out.Next = ps[len(ps)-1].ID
	}
	w.Header().Set("X-Total-Count", strconv.FormatInt(total, 10))
	return writeJSON(w, http.StatusOK, out)
}
