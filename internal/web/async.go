package web

import (
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"

	"github.com/jobd/jobd/internal/gateway"
	"github.com/jobd/jobd/job"
	"github.com/jobd/jobd/store"
)

// asyncRow is one async request.
type asyncRow struct {
	Job *job.Job
	// Method, Upstream and Path are the request's; Status the upstream's
	// answer, once done (0 for none).
	Method, Upstream, Path string
	Status                 int
	Stored                 bool
}

// asyncData is the async results page.
type asyncData struct {
	Configured bool
	// Pending lists the requests queued or running, else those done.
	Pending bool
	Rows    []asyncRow
	Next    template.URL
	Now     time.Time
}

// async: GET /ui/async[?view=done&after=], the gateway's requests,
// oldest first, as GET /api/v1/async/pending and done list them.
// Nothing here consumes a result: only the caller's PUT does.
func (s *server) async(w http.ResponseWriter, r *http.Request, v viewer) error {
	q := r.URL.Query()
	d := asyncData{Configured: s.cfg.Async != nil, Pending: q.Get("view") != "done", Now: s.clock.Now()}
	if !d.Configured {
		s.render(w, r, v, http.StatusOK, "async", "Async results", d)
		return nil
	}
	params := gateway.RequestList(d.Pending)
	params.Limit, params.NoTotal = pageSize+1, true
	if after := q.Get("after"); after != "" {
		id, err := uuid.Parse(after)
		if err != nil {
			return badRequest("after must be a request id")
		}
		params.After = &store.Cursor{ID: id}
	}
	res, err := s.store.JobList(r.Context(), params)
	if err != nil {
		return err
	}
	jobs := res.Jobs
	if len(jobs) > pageSize {
		jobs = jobs[:pageSize]
		next := url.Values{"after": {jobs[pageSize-1].ID.String()}}
		if !d.Pending {
			next.Set("view", "done")
		}
		d.Next = link("/ui/async", next)
	}
	for _, j := range jobs {
		row := asyncRow{Job: j}
		var req gateway.Request
		if json.Unmarshal(j.Args, &req) == nil {
			row.Method, row.Upstream, row.Path, row.Stored = req.Method, req.Upstream, req.Path, req.Store
		}
		var resp struct {
			Status int `json:"status"`
		}
		if j.State == job.StateSucceeded && json.Unmarshal(j.Result, &resp) == nil {
			row.Status = resp.Status
		}
		d.Rows = append(d.Rows, row)
	}
	s.render(w, r, v, http.StatusOK, "async", "Async results", d)
	return nil
}

// deleteAsync: POST /ui/async/{id}/delete, as DELETE /api/v1/async/{id}.
func (s *server) deleteAsync(w http.ResponseWriter, r *http.Request, v viewer) error {
	if s.cfg.Async == nil {
		return notFound("the async gateway is not configured on this server")
	}
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		return notFound("no async request %q", r.PathValue("id"))
	}
	if err := s.cfg.Async.DeleteResult(r.Context(), id); err != nil {
		return err
	}
	return done(w, r, "/ui/async?view=done", "Result deleted.")
}
